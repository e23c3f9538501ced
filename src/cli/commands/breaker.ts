import type { Command } from 'commander';
import { checkOverride } from '../../breaker/override.js';
import { overrideBreaker } from '../../breaker/override-breaker.js';
import type {
  BreakerListing,
  BreakerOverrideOp,
  BreakerSnapshot,
  ListedBreaker,
} from '../../breaker/types.js';
import { systemClock } from '../../common/clock.js';
import { formatDuration } from '../../common/duration.js';
import { assertPrefix } from '../../redis/budget-keys.js';
import { breakersOf, readFleetStatus } from '../../status/read-fleet-status.js';
import { withFleet } from '../fleet.js';
import { type CliIO, printJson } from '../io.js';
import {
  type BackendFlags,
  type FleetBackend,
  fleetBackend,
  withExamples,
  withFleetStateOptions,
} from '../options.js';
import { ago, table } from './dlq-output.js';

interface StatusFlags extends BackendFlags {
  prefix: string;
  json?: boolean;
}

/**
 * `stormguard breaker status|force-open|force-close|reset`: every dependency's circuit breaker as the fleet shares it in Redis or
 * PostgreSQL: state, failures and volume in the window, the failure streak, probes, when it opened and
 * when it half-opens.
 *
 * @example
 * stormguard breaker status --redis redis://10.0.0.5:6379 --prefix shop --json
 */
export function register(program: Command, io: CliIO): void {
  const breaker = program
    .command('breaker')
    .description('inspect the fleet-wide circuit breakers, and hold or reset one by hand');
  withExamples(withFleetStateOptions(breaker.command('status')), [
    'stormguard breaker status',
    'stormguard breaker status --redis redis://10.0.0.5:6379 --prefix shop --json',
    'stormguard breaker status --postgres postgres://app@db:5432/shop --schema stormguard',
  ])
    .description(
      "show every dependency's breaker: state, failures/volume in the window, open and half-open times",
    )
    .action(async (flags: StatusFlags, command: Command) => {
      assertPrefix(flags.prefix);
      const breakers = await listBreakers(fleetBackend(flags, command), flags.prefix);
      // The store's clock when there is a breaker to read it from, like every time the breaker itself uses.
      const nowMs = breakers[0]?.nowMs ?? systemClock.now();
      if (flags.json) printJson(io, { prefix: flags.prefix, nowMs, breakers });
      else io.stdout.write(`${formatStatus(flags.prefix, breakers, nowMs)}\n`);
    });
  registerOverrides(breaker, io);
}

interface OverrideFlags extends StatusFlags {
  reason: string;
  by?: string;
}

/** The CLI's name of each override, and what it does. */
const OVERRIDE_COMMANDS = [
  ['force-open', 'force-open', 'hold the breaker open fleet-wide (no call, no probe) until a reset'],
  [
    'force-close',
    'force-closed',
    'hold the breaker closed fleet-wide (failures never open it) until a reset',
  ],
  ['reset', 'reset', 'lift any hold and start the breaker afresh: closed, empty window'],
] as const satisfies readonly (readonly [string, BreakerOverrideOp, string])[];

/** `stormguard breaker force-open|force-close|reset <dependency> --reason "..."`. */
function registerOverrides(breaker: Command, io: CliIO): void {
  for (const [name, op, description] of OVERRIDE_COMMANDS)
    withExamples(withFleetStateOptions(breaker.command(name)), [
      `stormguard breaker ${name} search --reason "search cluster reindexing until 14:00" --by alice`,
      `stormguard breaker ${name} search --reason "..." --postgres postgres://app@db:5432/shop`,
    ])
      .description(`${description}; recorded in the audit log`)
      .argument('<dependency>', 'the dependency whose breaker to override')
      .requiredOption('--reason <text>', 'why, in words the next operator understands (required)')
      .option(
        '--by <name>',
        'who is acting, for the audit log (default: $STORMGUARD_OPERATOR, else "anonymous")',
      )
      .action(async (dependency: string, flags: OverrideFlags, command: Command) => {
        assertPrefix(flags.prefix);
        const request = checkOverride(op, {
          reason: flags.reason,
          by: flags.by ?? process.env.STORMGUARD_OPERATOR ?? 'anonymous',
        });
        const result = await withFleet(
          fleetBackend(flags, command),
          flags.prefix,
          (fleet) => overrideBreaker({ store: fleet.breaker, audit: fleet.audit }, dependency, op, request),
          { breakerTimeoutMs: OVERRIDE_TIMEOUT_MS },
        );
        if (flags.json) printJson(io, { prefix: flags.prefix, ...result });
        else io.stdout.write(`${formatOverride(dependency, op, result.snapshot, result.audit?.id)}\n`);
      });
}

/** An operator waits longer than a worker would: the action must land or say clearly that it did not. */
const OVERRIDE_TIMEOUT_MS = 10_000;

/** One line saying what the override did. */
export function formatOverride(
  dependency: string,
  op: BreakerOverrideOp,
  snapshot: BreakerSnapshot,
  auditId: string | undefined,
): string {
  const done =
    op === 'reset'
      ? `the ${dependency} breaker is reset: ${snapshot.state}, empty window, no hold`
      : `the ${dependency} breaker is held ${snapshot.override?.state ?? snapshot.state} until a reset`;
  return `${done} (workers follow within their stateCacheMs; audit entry ${auditId ?? '-'})`;
}

/** Every breaker under `prefix` in the backend the flags name. */
function listBreakers(backend: FleetBackend, prefix: string): Promise<ListedBreaker[]> {
  return withFleet(backend, prefix, (fleet) => readBreakers(fleet.breaker), { readOnly: true });
}

/** The breakers, as the fleet-status read model reads them; a store that cannot be read rejects. */
async function readBreakers(store: BreakerListing): Promise<ListedBreaker[]> {
  return breakersOf(await readFleetStatus({ breaker: store }, { throwOnError: true }));
}

/** The human `breaker status` table. */
export function formatStatus(prefix: string, breakers: ListedBreaker[], nowMs: number): string {
  if (breakers.length === 0) return `no circuit breaker state under prefix "${prefix}"`;
  const rows = [['DEPENDENCY', 'STATE', 'FAILURES/VOLUME', 'IN A ROW', 'PROBES', 'OPENED', 'HALF-OPENS']];
  for (const b of breakers) {
    const rate = b.volume > 0 ? ` (${Math.round((100 * b.failures) / b.volume)}%)` : '';
    const probes =
      b.state === 'half-open'
        ? `${b.probesAdmitted - b.probeSuccesses} in flight, ${b.probeSuccesses}/${b.options?.successesToClose ?? '?'} ok`
        : '-';
    rows.push([
      b.dependency,
      b.state,
      `${b.failures}/${b.volume}${rate}`,
      String(b.consecutiveFailures),
      probes,
      b.openedAtMs === undefined
        ? '-'
        : `${new Date(b.openedAtMs).toISOString()} (${ago(b.openedAtMs, nowMs)})`,
      halfOpens(b, nowMs),
    ]);
  }
  // Held breakers are said below the table, whose columns scripts already read.
  const held = breakers.flatMap((b) =>
    b.override
      ? [
          `${JSON.stringify(b.dependency)}: held ${b.override.state} by ${b.override.by} since ${new Date(b.override.atMs).toISOString()} (${ago(b.override.atMs, nowMs)}): ${b.override.reason}; stormguard breaker reset lifts it`,
        ]
      : [],
  );
  return [table(rows), ...held].join('\n');
}

function halfOpens(b: ListedBreaker, nowMs: number): string {
  if (b.state === 'open' && b.override) return 'held';
  if (b.state !== 'open' || b.halfOpenAtMs === undefined) return '-';
  const at = new Date(b.halfOpenAtMs).toISOString();
  return b.halfOpenAtMs > nowMs ? `${at} (in ${formatDuration(b.halfOpenAtMs - nowMs)})` : `${at} (due)`;
}
