import type { Command } from 'commander';
import { formatDuration, parseDuration } from '../../common/duration.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { WindowPlan } from '../../policy/plan-window.js';
import type { Backoff } from '../../policy/types.js';
import { type CliIO, printJson } from '../io.js';
import { withExamples } from '../options.js';
import { table } from './dlq-output.js';

/** The windows of seed 000's chart, which `plan --table` computes. */
export const CHART_WINDOWS = ['1m', '5m', '15m', '1h', '4h'] as const;

interface PlanFlags {
  window?: string;
  base: string;
  factor: string;
  cap: string;
  fit?: boolean;
  json?: boolean;
  table?: boolean;
}

/**
 * `stormguard plan`: the attempt ceiling that covers a recovery window, its schedule and warnings.
 * `--json` prints exactly what `planForWindow` returns (with `--table`, an array of them).
 *
 * @example
 * stormguard plan --window 15m
 * stormguard plan --window 4h --base 5s --cap 10m --fit --json
 * stormguard plan --table
 */
export function register(program: Command, io: CliIO): void {
  withExamples(program.command('plan'), [
    'stormguard plan --window 15m',
    'stormguard plan --window 4h --base 5s --cap 30m --fit',
    'stormguard plan --table',
  ])
    .description('derive maxAttempts from a recovery window: the fewest retries whose delays cover it')
    .option('--window <duration>', 'the recovery window to cover, e.g. 90s, 15m, 4h')
    .option('--base <duration>', 'first retry delay', '2s')
    .option('--factor <number>', 'growth factor per retry (>= 1)', '2')
    .option('--cap <duration>', 'largest single delay', '10m')
    .option('--fit', 'scale the base so the schedule ends on the window (within 1 %)')
    .option('--table', `print the chart for ${CHART_WINDOWS.join(', ')} (and --window, when given)`)
    .option('--json', 'print JSON')
    .action(async (flags: PlanFlags) => {
      const { LONG_WINDOW_MS, planForWindow } = await import('../../policy/plan-window.js');
      const backoff = backoffFromFlags(flags);
      const fit = flags.fit === true;
      const windowMs = flags.window === undefined ? undefined : windowFromFlag(flags.window);
      if (flags.table) {
        // A window given with --table joins the chart, in order, rather than being ignored.
        const windows = [...new Set([...CHART_WINDOWS.map((w) => parseDuration(w)), windowMs ?? 0])]
          .filter((ms) => ms > 0)
          .sort((a, b) => a - b);
        const plans = windows.map((ms) => planForWindow(ms, backoff, { fit }));
        if (flags.json) printJson(io, plans);
        else io.stdout.write(`${formatChart(plans, backoff, fit, LONG_WINDOW_MS)}\n`);
        return;
      }
      if (windowMs === undefined)
        throw new InvalidInputError(
          'plan: give --window <duration> (e.g. --window 15m), or --table for the chart',
        );
      const plan = planForWindow(windowMs, backoff, { fit });
      if (flags.json) printJson(io, plan);
      else io.stdout.write(`${formatPlan(plan)}\n`);
    });
}

function windowFromFlag(text: string): number {
  const ms = parseDuration(text, '--window');
  if (ms <= 0)
    throw new InvalidInputError(
      `--window: "${text}" must be longer than 0; give the recovery window, e.g. --window 15m`,
    );
  return ms;
}

function backoffFromFlags(flags: PlanFlags): Backoff {
  const factor = Number(flags.factor);
  if (flags.factor.trim() === '' || !Number.isFinite(factor) || factor < 1)
    throw new InvalidInputError(`--factor: "${flags.factor}" is not a number >= 1; use e.g. --factor 2`);
  const baseMs = parseDuration(flags.base, '--base');
  const maxDelayMs = parseDuration(flags.cap, '--cap');
  if (baseMs <= 0)
    throw new InvalidInputError(`--base: "${flags.base}" must be longer than 0; use e.g. --base 2s`);
  if (maxDelayMs < baseMs)
    throw new InvalidInputError(
      `--cap: ${flags.cap} is shorter than --base ${flags.base}; the cap must be at least the base`,
    );
  return { type: 'exponential', baseMs, factor, maxDelayMs };
}

function describeBackoff(b: Backoff): string {
  return b.type === 'fixed'
    ? `fixed ${formatDuration(b.delayMs)}`
    : `exponential, base ${formatDuration(b.baseMs)}, factor ${b.factor}, cap ${formatDuration(b.maxDelayMs)}`;
}

/** The human `plan` output: summary, schedule, warnings. */
export function formatPlan(plan: WindowPlan): string {
  const rows = [['RETRY', 'ATTEMPT', 'DELAY', 'STARTS AFTER']];
  let cumulative = 0;
  plan.delaysMs.forEach((delay, i) => {
    cumulative += delay;
    rows.push([String(i + 1), String(i + 2), formatDuration(delay), formatDuration(cumulative)]);
  });
  const lines = [
    `window ${formatDuration(plan.windowMs)}: ${plan.retries} retries, maxAttempts ${plan.maxAttempts}; the last retry starts ${formatDuration(plan.spanMs)} after the first failure`,
    `backoff: ${describeBackoff(plan.backoff)} (delays before jitter)`,
    '',
    table(rows),
  ];
  for (const warning of plan.warnings) lines.push('', `warning: ${warning}`);
  return lines.join('\n');
}

/**
 * The human `plan --table` chart: seed 000's windows, computed, with a bar per window; windows longer than
 * `longWindowMs` get a note to use a dead-letter queue instead.
 */
export function formatChart(
  plans: WindowPlan[],
  backoff: Backoff,
  fit: boolean,
  longWindowMs: number,
): string {
  const widest = Math.max(...plans.map((p) => p.maxAttempts));
  const rows = [['WINDOW', 'RETRIES', 'MAX ATTEMPTS', 'SPAN', 'ATTEMPTS']];
  for (const p of plans) {
    const bar = '█'.repeat(Math.max(1, Math.round((p.maxAttempts / widest) * 32)));
    const note = p.windowMs > longWindowMs ? '  past 15m: use a DLQ and replay' : '';
    rows.push([
      formatDuration(p.windowMs),
      String(p.retries),
      String(p.maxAttempts),
      formatDuration(p.spanMs),
      `${bar} ${p.maxAttempts}${note}`,
    ]);
  }
  const how = fit ? 'base fitted per window' : 'delays before jitter';
  return [
    `attempts needed to cover a recovery window (${describeBackoff(backoff)}; ${how})`,
    '',
    table(rows),
  ].join('\n');
}
