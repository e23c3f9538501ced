import type { Command } from 'commander';
import { formatDuration, parseDuration } from '../../common/duration.js';
import { assertDependencyName, assertPrefix } from '../../common/names.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { DependencyLimit } from '../../runtime/limits/store.js';
import {
  changeLimits,
  checkLimitChange,
  type LimitAction,
  type LimitChangeRequest,
  type LimitChangeResult,
} from '../../status/limit-actions.js';
import { readFleetStatus } from '../../status/read-fleet-status.js';
import type { DependencyLimitStatus } from '../../status/types.js';
import { type CliFleet, withFleet } from '../fleet.js';
import { type CliIO, printJson } from '../io.js';
import { type BackendFlags, fleetBackend, withExamples, withFleetStateOptions } from '../options.js';

interface LimitsFlags extends BackendFlags {
  prefix: string;
  json?: boolean;
}

interface ChangeFlags extends LimitsFlags {
  reason: string;
  by?: string;
  expires?: string;
  maxInFlight?: string;
  maxRatePerSecond?: string;
}

/** A limited dependency's row of `limits status --json`. */
type LimitRow = { dependency: string } & DependencyLimitStatus;

/** The flags each field of a change is given by, named in errors. */
const FLAG_NAMES = {
  reason: '--reason',
  by: '--by',
  expiresInMs: '--expires',
  maxInFlight: '--max-in-flight',
  maxRatePerSecond: '--max-rate-per-second',
} as const;

/** The CLI's change commands: what each does, and whether it takes limits and an expiry. */
const CHANGES = [
  [
    'set',
    "override the dependency's limits fleet-wide (the fields given; its other override fields stay)",
    { limits: true, expires: true },
  ],
  [
    'pause',
    'stop every call to the dependency fleet-wide until resumed (the breaker is left alone)',
    { limits: false, expires: true },
  ],
  [
    'resume',
    "lift a pause; the override's other fields stay (an override left with none goes)",
    { limits: false, expires: false },
  ],
  [
    'reset',
    "back to the workers' code: the override and any Retry-After hold go",
    { limits: false, expires: false },
  ],
] as const satisfies readonly (readonly [LimitAction, string, { limits: boolean; expires: boolean }])[];

/**
 * `stormguard limits status|set|pause|resume|reset`: each dependency's fleet-wide limits as the flow store
 * shares them (calls in flight against `maxInFlight`, the rate, a Retry-After hold, an operator's
 * override), and an operator's changes to them, each with a reason and written to the audit log. Workers
 * follow a change within their `stateCacheMs`.
 *
 * @example
 * stormguard limits status openai --redis redis://10.0.0.5:6379 --prefix shop
 * stormguard limits pause openai --reason "vendor incident, 429s since 14:00" --expires 30m
 */
export function register(program: Command, io: CliIO): void {
  const limits = program
    .command('limits')
    .description('inspect the fleet-wide limits per dependency, and change them by hand (audited)');
  withExamples(withFleetStateOptions(limits.command('status')), [
    'stormguard limits status',
    'stormguard limits status openai --json',
    'stormguard limits status --postgres postgres://app@db:5432/shop --schema stormguard',
  ])
    .description(
      'show each limited dependency: calls in flight against maxInFlight, the rate, a Retry-After hold, an operator override or pause, probing',
    )
    .argument('[dependency]', 'the dependency to show (default: every limited one)')
    .action(async (dependency: string | undefined, flags: LimitsFlags, command: Command) => {
      if (dependency !== undefined) assertDependencyName(dependency);
      const rows = await withLimitsFleet(
        flags,
        command,
        async (fleet) => {
          const status = await readFleetStatus({ limits: fleet.flow }, { throwOnError: true });
          return status.dependencies.flatMap((d): LimitRow[] =>
            d.limits && (dependency === undefined || d.dependency === dependency)
              ? [{ dependency: d.dependency, ...d.limits }]
              : [],
          );
        },
        true,
      );
      if (flags.json) printJson(io, { prefix: flags.prefix, dependencies: rows });
      else io.stdout.write(`${formatLimitsStatus(flags.prefix, rows, dependency)}\n`);
    });
  for (const [action, description, takes] of CHANGES) {
    const sub = withExamples(withFleetStateOptions(limits.command(action)), examplesOf(action))
      .description(`${description}; recorded in the audit log`)
      .argument('<dependency>', 'the dependency whose limits to change')
      .requiredOption('--reason <text>', 'why, in words the next operator understands (required)')
      .option(
        '--by <name>',
        'who is acting, for the audit log (default: $STORMGUARD_OPERATOR, else "anonymous")',
      );
    if (takes.limits)
      sub
        .option('--max-in-flight <n>', 'calls in flight at once, fleet-wide (a whole number >= 1)')
        .option('--max-rate-per-second <n>', 'calls started per second, fleet-wide (a number > 0)');
    if (takes.expires)
      sub.option(
        '--expires <duration>',
        'the override lapses by itself after this long (30m, 4h); default: until a reset',
      );
    sub.action(async (dependency: string, flags: ChangeFlags, command: Command) => {
      assertDependencyName(dependency);
      const request = checkLimitChange(action, requestOf(flags), FLAG_NAMES);
      const result = await withLimitsFleet(flags, command, (fleet) =>
        changeLimits({ store: fleet.flow, audit: fleet.audit }, dependency, action, request),
      );
      if (flags.json) printJson(io, { prefix: flags.prefix, ...result });
      else io.stdout.write(`${formatChange(result)}\n`);
    });
  }
}

function examplesOf(action: LimitAction): string[] {
  switch (action) {
    case 'set':
      return [
        'stormguard limits set openai --max-in-flight 10 --reason "vendor asked us to slow down" --expires 2h',
        'stormguard limits set crm --max-rate-per-second 5 --reason "nightly sync window" --by alice',
      ];
    case 'pause':
      return [
        'stormguard limits pause openai --reason "vendor incident, 429s since 14:00" --expires 30m',
        'stormguard limits pause openai --reason "..." --postgres postgres://app@db:5432/shop',
      ];
    case 'resume':
      return ['stormguard limits resume openai --reason "vendor incident over"'];
    case 'reset':
      return ['stormguard limits reset openai --reason "back to the limits in code"'];
  }
}

/** The change the flags ask for; numbers and the expiry parsed, the rest checked by `checkLimitChange`. */
function requestOf(flags: ChangeFlags): LimitChangeRequest {
  const request: LimitChangeRequest = {
    reason: flags.reason,
    by: flags.by ?? process.env.STORMGUARD_OPERATOR ?? 'anonymous',
  };
  if (flags.maxInFlight !== undefined) request.maxInFlight = numberFlag('--max-in-flight', flags.maxInFlight);
  if (flags.maxRatePerSecond !== undefined)
    request.maxRatePerSecond = numberFlag('--max-rate-per-second', flags.maxRatePerSecond);
  if (flags.expires !== undefined) request.expiresInMs = parseDuration(flags.expires, '--expires');
  return request;
}

function numberFlag(flag: string, text: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(n))
    throw new InvalidInputError(`${flag}: ${JSON.stringify(text)} is not a number; write it like 25 or 0.5`);
  return n;
}

/** Runs `work` with the fleet on the backend the flags name (Redis, or PostgreSQL). */
function withLimitsFleet<T>(
  flags: LimitsFlags,
  command: Command,
  work: (fleet: CliFleet) => Promise<T>,
  readOnly = false,
): Promise<T> {
  assertPrefix(flags.prefix);
  return withFleet(fleetBackend(flags, command), flags.prefix, work, readOnly ? { readOnly: true } : {});
}

/** The human `limits status`: one block per limited dependency. */
export function formatLimitsStatus(
  prefix: string,
  rows: readonly LimitRow[],
  dependency: string | undefined,
): string {
  if (rows.length === 0)
    return dependency === undefined
      ? `no limits under prefix "${prefix}" (no worker declares any, no override, no hold)`
      : `${dependency}: no limits (no worker declares any, no override, no hold)`;
  return rows.map(formatRow).join('\n');
}

function formatRow(row: LimitRow): string {
  const lines = [
    `${row.dependency}: ${limitsText(row.effective, row.inFlight)}${row.pinned ? ' (at the cap: calls wait for a slot)' : ''}`,
  ];
  if (row.hold)
    lines.push(
      `  held until ${clockTime(row.hold.untilMs, row.hold.remainingMs)} by Retry-After (in ${formatDuration(row.hold.remainingMs)})`,
    );
  if (row.override) lines.push(`  ${overrideText(row.override, row.declared)}`);
  if (row.probing) lines.push('  probing: a hold ended, and only probes run until one succeeds');
  return lines.join('\n');
}

/** `24/25 in flight, at most 50/s`; a limit not set says so. */
function limitsText(limit: DependencyLimit, inFlight?: number): string {
  const flight =
    limit.maxInFlight === undefined
      ? inFlight === undefined
        ? 'no in-flight cap'
        : `${inFlight} in flight (no cap)`
      : inFlight === undefined
        ? `at most ${limit.maxInFlight} in flight`
        : `${inFlight}/${limit.maxInFlight} in flight`;
  const rate = limit.maxRatePerSecond === undefined ? 'no rate limit' : `at most ${limit.maxRatePerSecond}/s`;
  return `${flight}, ${rate}`;
}

/** `paused by alice: vendor incident (expires 14:30:00 UTC, in 25m)`, with what the override sets. */
function overrideText(
  override: NonNullable<DependencyLimitStatus['override']>,
  declared: DependencyLimit,
): string {
  const parts: string[] = [];
  if (override.paused) parts.push('paused');
  if (override.maxInFlight !== undefined)
    parts.push(`maxInFlight ${override.maxInFlight} (code: ${declared.maxInFlight ?? 'none'})`);
  if (override.maxRatePerSecond !== undefined)
    parts.push(
      `maxRatePerSecond ${override.maxRatePerSecond} (code: ${declared.maxRatePerSecond ?? 'none'})`,
    );
  const what = override.paused ? parts.join(', ') : `set ${parts.join(', ')}`;
  const until =
    override.expiresAtMs === undefined || override.expiresInMs === undefined
      ? 'until a reset'
      : `expires ${clockTime(override.expiresAtMs, override.expiresInMs)}, in ${formatDuration(override.expiresInMs)}`;
  return `${what} by ${override.by}: ${override.reason} (${until})`;
}

/** A time of day in UTC (`14:05:07 UTC`), with the date when it is more than 12 hours away. */
function clockTime(atMs: number, awayMs: number): string {
  const iso = new Date(atMs).toISOString();
  return awayMs < 12 * 3_600_000
    ? `${iso.slice(11, 19)} UTC`
    : `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** One line saying what a change did. */
export function formatChange(result: LimitChangeResult): string {
  const { dependency, action, state } = result;
  const override = state.override;
  const until =
    override?.expiresAtMs === undefined
      ? undefined
      : `${clockTime(override.expiresAtMs, override.expiresAtMs - state.nowMs)} (in ${formatDuration(override.expiresAtMs - state.nowMs)})`;
  let done: string;
  switch (action) {
    case 'set':
      done = `limits set fleet-wide: ${limitsText(state.effective)}, ${until ? `until ${until}` : 'until a reset'}`;
      break;
    case 'pause':
      done = `paused fleet-wide: no call starts ${until ? `until ${until}` : 'until resumed'}`;
      break;
    case 'resume':
      done = `resumed: ${limitsText(state.effective)}`;
      break;
    case 'reset':
      done = `back to the workers' code: ${limitsText(state.effective)}; no override, no hold`;
      break;
  }
  return `${dependency}: ${done} (workers follow within their stateCacheMs; audit entry ${result.audit?.id ?? '-'})`;
}
