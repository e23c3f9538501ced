import type { Command } from 'commander';
import type { BreakerListing, ListedBreaker } from '../../breaker/types.js';
import { systemClock } from '../../common/clock.js';
import { formatDuration } from '../../common/duration.js';
import { assertPrefix } from '../../redis/budget-keys.js';
import { breakersOf, readFleetStatus } from '../../status/read-fleet-status.js';
import { readSchema, withPostgres } from '../connect-postgres.js';
import { withRedis } from '../connect-redis.js';
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
 * `stormguard breaker status`: every dependency's circuit breaker as the fleet shares it in Redis or
 * PostgreSQL: state, failures and volume in the window, the failure streak, probes, when it opened and
 * when it half-opens.
 *
 * @example
 * stormguard breaker status --redis redis://10.0.0.5:6379 --prefix shop --json
 */
export function register(program: Command, io: CliIO): void {
  const breaker = program.command('breaker').description('inspect the fleet-wide circuit breakers');
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
}

/** Every breaker under `prefix` in the backend the flags name. */
async function listBreakers(backend: FleetBackend, prefix: string): Promise<ListedBreaker[]> {
  if (backend.kind === 'redis') {
    const { RedisBreakerStore } = await import('../../redis/breaker-store.js');
    return withRedis(backend.url, (redis) => readBreakers(new RedisBreakerStore({ redis, prefix })));
  }
  const { PostgresBreakerStore } = await import('../../postgres/breaker-store.js');
  return withPostgres(backend.url, (pool) =>
    readSchema(backend, () =>
      readBreakers(
        new PostgresBreakerStore({ connection: pool, schema: backend.schema, prefix, migrate: false }),
      ),
    ),
  );
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
  return table(rows);
}

function halfOpens(b: ListedBreaker, nowMs: number): string {
  if (b.state !== 'open' || b.halfOpenAtMs === undefined) return '-';
  const at = new Date(b.halfOpenAtMs).toISOString();
  return b.halfOpenAtMs > nowMs ? `${at} (in ${formatDuration(b.halfOpenAtMs - nowMs)})` : `${at} (due)`;
}
