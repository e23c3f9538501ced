import type { Command } from 'commander';
import { formatDuration } from '../../common/duration.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { SampledSchedule } from '../../policy/sample-schedule.js';
import type { RetryPolicy } from '../../policy/types.js';
import { type CliIO, printJson } from '../io.js';
import { withExamples } from '../options.js';
import { table } from './dlq-output.js';

interface ScheduleFlags {
  preset?: string;
  config?: string;
  policy?: string;
  samples: string;
  seed: string;
  json?: boolean;
  /** False with --no-exec: data formats only. */
  exec: boolean;
}

/**
 * `stormguard schedule`: a policy's retries as `decide` schedules them, sampled under its jitter: each
 * retry's delay (min, median, max), when it starts, and how many jobs the max age stops.
 *
 * @example
 * stormguard schedule --preset email
 * stormguard schedule --config stormguard.config.yaml --policy search --samples 5000 --json
 */
export function register(program: Command, io: CliIO): void {
  withExamples(program.command('schedule'), [
    'stormguard schedule --preset email',
    'stormguard schedule --config stormguard.config.yaml --policy search --samples 5000 --json',
  ])
    .description(
      "show a policy's retry delays under its jitter (min, median, max), cumulative span and max age",
    )
    .option('--preset <name>', 'a built-in preset, e.g. email, payment, idempotentInternal')
    .option(
      '--config <file>',
      'a config file (.json, .yaml, or .js/.ts, which are executed) holding named policies',
    )
    .option('--no-exec', 'with --config: read data formats only (.json, .yaml); refuse configs that are code')
    .option('--policy <name>', 'the policy to show from --config')
    .option('--samples <n>', 'jobs to sample', '1000')
    .option('--seed <n>', 'random seed (the output is reproducible)', '1')
    .option('--json', 'print JSON')
    .action(async (flags: ScheduleFlags) => {
      const policy = await choosePolicy(flags);
      const samples = Number(flags.samples);
      if (!/^\d+$/.test(flags.samples.trim()) || samples < 1 || samples > 100_000)
        throw new InvalidInputError(`--samples: "${flags.samples}" is not a whole number from 1 to 100000`);
      const seed = Number(flags.seed);
      if (!/^-?\d+$/.test(flags.seed.trim()) || !Number.isSafeInteger(seed))
        throw new InvalidInputError(`--seed: "${flags.seed}" is not an integer`);
      const { sampleSchedule } = await import('../../policy/sample-schedule.js');
      const schedule = sampleSchedule(policy, { samples, seed });
      if (flags.json) printJson(io, schedule);
      else io.stdout.write(`${formatSchedule(schedule, policy)}\n`);
    });
}

async function choosePolicy(flags: ScheduleFlags): Promise<RetryPolicy> {
  if (flags.preset !== undefined && flags.config !== undefined)
    throw new InvalidInputError('schedule: give either --preset or --config with --policy, not both');
  if (flags.preset !== undefined) {
    const { getPreset } = await import('../../policy/presets.js');
    return getPreset(flags.preset);
  }
  if (flags.config === undefined)
    throw new InvalidInputError(
      'schedule: give --preset <name> (e.g. --preset email) or --config <file> --policy <name>',
    );
  const { loadPolicies } = await import('../../config/load-policies.js');
  const { policies } = await loadPolicies(flags.config, { execute: flags.exec });
  const names = Object.keys(policies);
  const name = flags.policy ?? (names.length === 1 ? names[0] : undefined);
  if (name === undefined)
    throw new InvalidInputError(
      `schedule: ${flags.config} holds several policies; choose one with --policy (${names.join(', ')})`,
    );
  const policy = policies[name];
  if (!policy)
    throw new InvalidInputError(
      `schedule: no policy "${name}" in ${flags.config}; it holds ${names.join(', ')}`,
    );
  return policy;
}

/** The human `schedule` output. */
export function formatSchedule(s: SampledSchedule, policy: RetryPolicy): string {
  const rows = [['RETRY', 'ATTEMPT', 'DELAY MIN', 'MEDIAN', 'MAX', 'STARTS AFTER (MEDIAN)', 'MAX']];
  for (const r of s.retries) {
    if (r.runs === 0) {
      rows.push([String(r.retry), String(r.attempt), '-', '-', '-', 'never: past max age', '-']);
      continue;
    }
    const stopped = r.refusedByMaxAge > 0 ? ` (max age stops ${r.refusedByMaxAge} of ${s.samples})` : '';
    rows.push([
      String(r.retry),
      String(r.attempt),
      formatDuration(r.delay.minMs),
      formatDuration(r.delay.medianMs),
      formatDuration(r.delay.maxMs),
      formatDuration(r.startsAfter.medianMs),
      `${formatDuration(r.startsAfter.maxMs)}${stopped}`,
    ]);
  }
  const age = s.maxAgeMs === null ? 'none' : formatDuration(s.maxAgeMs);
  const last = s.retries.at(-1);
  const span = last && last.runs > 0 ? formatDuration(last.startsAfter.maxMs) : '-';
  return [
    `policy ${s.policy}: maxAttempts ${s.maxAttempts}, jitter ${policy.jitter}, max age ${age}`,
    `${s.samples} sampled jobs failing every attempt (seed ${s.seed}); the last retry starts at most ${span} after the first failure`,
    '',
    table(rows),
  ].join('\n');
}
