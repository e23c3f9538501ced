import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { formatDuration, parseDuration } from '../../common/duration.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import { assertPrefix } from '../../redis/budget-keys.js';
import type { BudgetStatus, BudgetStatusSource } from '../../status/budget.js';
import { budgetsOf, readFleetStatus } from '../../status/read-fleet-status.js';
import { withFleet } from '../fleet.js';
import { interruption } from '../interruption.js';
import { type CliIO, printJson } from '../io.js';
import { type BackendFlags, fleetBackend, withExamples, withFleetStateOptions } from '../options.js';
import { table } from './dlq-output.js';

interface StatusFlags extends BackendFlags {
  prefix: string;
  json?: boolean;
}

interface WatchFlags extends StatusFlags {
  interval: string;
  count?: string;
}

const BAR_WIDTH = 30;

/**
 * `stormguard budget status|watch`: every dependency's fleet-wide retry budget as stored in Redis or
 * PostgreSQL (allowance, spent, denied, successes, headroom). Only reads.
 *
 * @example
 * stormguard budget status --redis redis://10.0.0.5:6379 --prefix shop --json
 * stormguard budget watch --interval 1s
 */
export function register(program: Command, io: CliIO): void {
  const budget = program.command('budget').description('inspect the fleet-wide retry budgets');
  withExamples(withFleetStateOptions(budget.command('status')), [
    'stormguard budget status --redis redis://10.0.0.5:6379 --prefix shop --json',
    'stormguard budget status --postgres postgres://app@db:5432/shop --schema stormguard',
  ])
    .description("show every dependency's budget: allowance, spent, denied, successes, headroom")
    .action(async (flags: StatusFlags, command: Command) => {
      assertPrefix(flags.prefix);
      const backend = fleetBackend(flags, command);
      const rows = await withFleet(backend, flags.prefix, (fleet) => readBudgets(fleet.budget), {
        readOnly: true,
      });
      if (flags.json) printJson(io, { prefix: flags.prefix, dependencies: rows });
      else io.stdout.write(`${formatStatus(flags.prefix, rows)}\n`);
    });

  withExamples(withFleetStateOptions(budget.command('watch'), 'print one JSON document per line and frame'), [
    'stormguard budget watch --interval 1s',
    'stormguard budget watch --json --count 10 > budgets.jsonl',
  ])
    .description('redraw the budgets with a bar of spend against allowance until interrupted (Ctrl-C)')
    .option('--interval <duration>', 'time between redraws', '1s')
    .option('--count <n>', 'stop after this many redraws (default: until interrupted)')
    .action(async (flags: WatchFlags, command: Command) => {
      assertPrefix(flags.prefix);
      const backend = fleetBackend(flags, command);
      const intervalMs = parseDuration(flags.interval, '--interval');
      if (intervalMs < 100) throw new InvalidInputError('--interval: must be at least 100ms');
      const count = flags.count === undefined ? Number.POSITIVE_INFINITY : parseCount(flags.count);
      // Survives a blip: a frame that cannot be read shows the error and the next one retries.
      await withFleet(
        backend,
        flags.prefix,
        async ({ budget: store, explain }) => {
          const stop = interruption(io);
          try {
            for (let frame = 0; frame < count && !stop.signal.aborted; frame++) {
              const read = await readBudgets(store).then(
                (rows) => ({ rows }),
                (error: unknown) => {
                  const shown = explain(error);
                  return { error: shown instanceof Error ? shown.message : String(shown) };
                },
              );
              const at = new Date().toISOString();
              if (flags.json)
                io.stdout.write(
                  `${JSON.stringify('rows' in read ? { at, dependencies: read.rows } : { at, error: read.error })}\n`,
                );
              else {
                const clear = io.stdout.isTTY ? '\x1b[H\x1b[2J' : frame > 0 ? '\n' : '';
                const body =
                  'rows' in read
                    ? formatWatch(flags.prefix, read.rows, intervalMs)
                    : formatWatchError(
                        flags.prefix,
                        read.error,
                        intervalMs,
                        backend.kind === 'redis' ? 'Redis' : 'PostgreSQL',
                      );
                io.stdout.write(`${clear}${body}\n`);
              }
              if (frame + 1 < count)
                await sleep(intervalMs, undefined, { signal: stop.signal }).catch(() => {});
            }
          } finally {
            stop.dispose();
          }
        },
        { readOnly: true, longRunning: true },
      );
    });
}

/** The budgets, as the fleet-status read model reads them; a store that cannot be read rejects. */
async function readBudgets(store: BudgetStatusSource): Promise<BudgetStatus[]> {
  return budgetsOf(await readFleetStatus({ budget: store }, { throwOnError: true }));
}

function parseCount(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new InvalidInputError(`--count: "${text}" must be a whole number >= 1`);
  return n;
}

/** The human `budget status` table. */
export function formatStatus(prefix: string, rows: BudgetStatus[]): string {
  if (rows.length === 0) return `no retry budget state under prefix "${prefix}"`;
  const lines = [
    ['DEPENDENCY', 'ALLOWANCE', 'SPENT', 'DENIED', 'SUCCESSES', 'HEADROOM', 'RATIO', 'FLOOR', 'WINDOW'],
  ];
  for (const r of rows)
    lines.push(
      r.unreadable !== undefined
        ? [r.dependency, ...Array(8).fill('-')]
        : [
            r.dependency,
            String(r.allowance),
            String(r.spent),
            String(r.denied),
            String(r.successes),
            String(r.headroom),
            String(r.ratio),
            String(r.minAllowance),
            formatDuration(r.windowMs),
          ],
    );
  const unreadable = rows
    .filter((r) => r.unreadable !== undefined)
    .map(
      (r) =>
        `${JSON.stringify(r.dependency)}: state unreadable (${r.unreadable}); its next retry decision starts it afresh`,
    );
  const pending = rows.flatMap((r) =>
    r.pending
      ? [
          `${JSON.stringify(r.dependency)}: settingsVersion ${r.pending.settingsVersion} (ratio ${r.pending.ratio}, floor ${r.pending.minAllowance}, window ${formatDuration(r.pending.windowMs)}) takes over once it holds a whole window; until then both bind`,
        ]
      : [],
  );
  return [table(lines), ...unreadable, ...pending].join('\n');
}

/** One `budget watch` frame: a bar of spend against allowance per dependency. */
export function formatWatch(prefix: string, rows: BudgetStatus[], intervalMs: number): string {
  const header = watchHeader(prefix, intervalMs);
  if (rows.length === 0) return `${header}\n(no dependencies yet)`;
  const width = Math.max(...rows.map((r) => r.dependency.length));
  const lines = rows.map((r) => {
    if (r.unreadable !== undefined)
      return `${r.dependency.padEnd(width)}  state unreadable (${r.unreadable})`;
    const share = r.allowance > 0 ? Math.min(1, r.spent / r.allowance) : 1;
    const filled = Math.round(share * BAR_WIDTH);
    const bar = `${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}`;
    const denied = r.denied > 0 ? `  ${r.denied} denied` : '';
    return `${r.dependency.padEnd(width)}  [${bar}] ${r.spent}/${r.allowance} spent, headroom ${r.headroom}${denied}`;
  });
  return [header, ...lines].join('\n');
}

/** A `budget watch` frame while the store cannot be read: the error, and that the next frame tries again. */
export function formatWatchError(prefix: string, error: string, intervalMs: number, store = 'Redis'): string {
  return `${watchHeader(prefix, intervalMs)}\ncannot read the budgets from ${store}: ${error}; trying again in ${formatDuration(intervalMs)}`;
}

function watchHeader(prefix: string, intervalMs: number): string {
  return `retry budgets under "${prefix}" (every ${formatDuration(intervalMs)}, Ctrl-C to stop)`;
}
