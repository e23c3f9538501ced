import type { Command } from 'commander';
import { parseDuration } from '../../common/duration.js';
import { DEFAULT_PREFIX } from '../../common/keys.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import { DEAD_LETTER_REASONS, type DeadLetterReason } from '../../policy/types.js';
import type { DeadLetterFilter } from '../../runtime/replay/dead-letter-filter.js';
import { type BackendFlags, withPostgresOption, withRedisOption } from '../options.js';

// The reasons as the help text lists them (policy/types.ts loads nothing, so every command can afford it).
const REASON_NAMES: readonly DeadLetterReason[] = DEAD_LETTER_REASONS;

/** Options every `dlq` subcommand takes. */
export interface CommonDlqOptions extends BackendFlags {
  prefix: string;
  bullPrefix: string;
  json?: boolean;
}

/** Filter options as commander hands them over. */
export interface FilterFlags {
  reason?: string;
  dependency?: string;
  since?: string;
  name?: string;
}

/** Adds `--redis`, `--postgres`, `--schema`, `--prefix`, `--bull-prefix` and `--json` to a subcommand. */
export function withCommonOptions(command: Command): Command {
  return withPostgresOption(withRedisOption(command))
    .option('--prefix <prefix>', 'stormguard key prefix (where the dead-letter store is)', DEFAULT_PREFIX)
    .option('--bull-prefix <prefix>', 'BullMQ key prefix of the queue jobs are replayed to (Redis)', 'bull')
    .option('--json', 'print JSON');
}

/** Adds the record filters to a subcommand. */
export function withFilterOptions(command: Command): Command {
  return command
    .option('--reason <reason>', `only this reason (${REASON_NAMES.join(', ')})`)
    .option('--dependency <name>', 'only jobs charged to this dependency')
    .option('--since <duration>', 'only jobs dead-lettered within this long (90s, 15m, 1h)')
    .option('--name <name>', 'only jobs with this name (task)');
}

/** Turns filter flags into a {@link DeadLetterFilter}, rejecting bad values with a one-line message. */
export function parseFilterFlags(flags: FilterFlags): DeadLetterFilter {
  const filter: DeadLetterFilter = {};
  if (flags.reason !== undefined) {
    if (!(REASON_NAMES as readonly string[]).includes(flags.reason))
      throw new InvalidInputError(
        `--reason: "${flags.reason}" is not a dead-letter reason; use one of ${REASON_NAMES.join(', ')}`,
      );
    filter.reason = flags.reason as DeadLetterReason;
  }
  if (flags.dependency !== undefined) filter.dependency = flags.dependency;
  if (flags.name !== undefined) filter.name = flags.name;
  if (flags.since !== undefined) filter.sinceMs = parseDuration(flags.since, '--since');
  return filter;
}

const RATE = /^(\d+(?:\.\d+)?)(?:\/(s|sec|m|min|h))?$/;
const PER_SECOND: Record<string, number> = { s: 1, sec: 1, m: 1 / 60, min: 1 / 60, h: 1 / 3600 };

/**
 * Parses a rate into jobs per second: `50/s`, `600/m`, `1000/h`, or a bare number per second.
 *
 * @example
 * parseRate('600/m'); // 10
 */
export function parseRate(text: string): number {
  const match = RATE.exec(text.trim());
  const perSecond = match ? Number(match[1]) * (PER_SECOND[match[2] ?? 's'] as number) : Number.NaN;
  if (!(perSecond > 0))
    throw new InvalidInputError(
      `--rate: "${text}" is not a rate; write it like 50/s, 600/m or 1000/h (above 0)`,
    );
  return perSecond;
}

/** Parses a whole number >= `min` for `flag`. */
export function parseWholeNumber(text: string, flag: string, min = 0): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < min)
    throw new InvalidInputError(`${flag}: "${text}" is not a whole number >= ${min}`);
  return n;
}
