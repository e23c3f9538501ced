/**
 * The console with many dead letters, on Redis and on PostgreSQL, each a server this script starts on a
 * free port (the test harness's: redis-server, and `initdb` into a temporary folder):
 *
 * - pages: the first page of a filtered dead-letter list (with its count), over HTTP against the console's
 *   own handler, and one overview update (`readFleetStatus`, the read each live tick makes), at
 *   `--records` and at a tenth of it, median and 95th percentile of `--rounds` rounds. The queue is seeded
 *   fast in each store's own layout (pipelined writes on Redis, `generate_series` on PostgreSQL), after a
 *   check that the seed writes exactly what the store's own filing writes for a few records. On Redis the
 *   baseline lists budgets and breakers the way the stores did before their dependency registry: a SCAN
 *   of the whole keyspace for each.
 *
 * - sse: the console in a process of its own with `--clients` live pages open, `--stalled` of which never
 *   read, over `--dependencies` dependencies updated every `--interval-ms` (far more often than the 2 s
 *   default, so buffers fill in seconds); its memory and what waits in it for each client, every second
 *   for `--seconds`, with the console's limit (1 MiB per client) and without it (the baseline).
 *
 *   npx tsx bench/dashboard/index.ts [--records 1000000] [--rounds 30] [--backends redis,postgres]
 *     [--part pages|sse|all] [--seconds 30] [--clients 50] [--stalled 10] [--dependencies 100]
 *     [--interval-ms 20] [--json]
 */
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { postgresFleet } from '../../src/postgres/fleet.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import {
  budgetKeyPattern,
  dependencyKeyPattern,
  dependencyOfBudgetKey,
} from '../../src/redis/budget-keys.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { redisFleet } from '../../src/redis/fleet.js';
import { scanKeys } from '../../src/redis/scan.js';
import type { Fleet } from '../../src/status/fleet.js';
import type { FleetStatusSources } from '../../src/status/types.js';
import { TestPostgres } from '../../tests/helpers/postgres-server.js';
import { TestRedis } from '../../tests/helpers/redis-server.js';
import { formatTable } from '../common.js';
import { DEPENDENCIES, type Measured, measure, PAGES, type Spread, writeDependencyState } from './measure.js';
import { ATTEMPTS_TTL_MS, FINAL_STATE, record } from './records.js';
import { checkPostgresLayout, seedPostgres } from './seed-postgres.js';
import { checkRedisLayout, seedRedis } from './seed-redis.js';
import { measureSse, type SseRun } from './sse.js';

const args = parseCommandLine();

interface BackendResult {
  backend: 'redis' | 'postgres';
  /** Per size: the records, how long the seed took, and the figures. */
  sizes: { records: number; seedMs: number; measured: Measured }[];
  /** The store's size after both seeds: Redis used_memory, or the dead-letter tables' size on disk. */
  storeBytes: number;
}

const load = () => loadavg().map((x) => Number(x.toFixed(2)));
const machine = {
  cpus: cpus().length,
  model: cpus()[0]?.model ?? '?',
  node: process.version,
  loadAtStart: load(),
};
const results: BackendResult[] = [];

if (args.part !== 'sse') {
  if (args.backends.includes('redis')) results.push(await onRedis());
  if (args.backends.includes('postgres')) results.push(await onPostgres());
}
const sse = args.part === 'pages' ? [] : await onLivePages();
const loadAtEnd = load();

if (args.json) console.log(JSON.stringify({ machine: { ...machine, loadAtEnd }, args, pages: results, sse }));
else {
  console.log(
    `console at scale (${machine.cpus} cpus, ${machine.model}, node ${machine.node}; load average ${machine.loadAtStart.join(' ')} at start, ${loadAtEnd.join(' ')} at end)`,
  );
  for (const result of results) printPages(result);
  for (const run of sse) printLive(run);
}

async function onLivePages(): Promise<SseRun[]> {
  const server = await TestRedis.start();
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  try {
    return await measureSse(redis, server.url, args);
  } finally {
    redis.disconnect();
    await server.close();
  }
}

async function onRedis(): Promise<BackendResult> {
  const server = await TestRedis.start();
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  try {
    await checkRedisLayout(redis, 'check');
    const sizes: BackendResult['sizes'] = [];
    for (const [prefix, n] of sizesOf(args.records)) {
      const t0 = performance.now();
      await seedRedis(redis, prefix, 'index', n);
      const seedMs = performance.now() - t0;
      const fleet = redisFleet({ redis, prefix });
      await fileOneMore(fleet, n);
      await writeDependencyState(fleet);
      const baselineRounds = Math.min(args.rounds, 5);
      const measured = await measure(fleet, n, args.rounds, {
        'baseline: budgets and breakers by SCAN': {
          sources: scanningStatus(redis, fleet, prefix),
          rounds: baselineRounds,
        },
      });
      sizes.push({ records: n, seedMs, measured });
    }
    const memory = await redis.info('memory');
    return { backend: 'redis', sizes, storeBytes: Number(/used_memory:(\d+)/.exec(memory)?.[1] ?? 0) };
  } finally {
    redis.disconnect();
    await server.close();
  }
}

async function onPostgres(): Promise<BackendResult> {
  // shared_buffers as a small production server has it, not the test harness's 32 MB.
  const server = await TestPostgres.start({ settings: { shared_buffers: '256MB' } });
  const db = await server.createDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 10 });
  const schema = 'stormguard';
  try {
    await checkPostgresLayout(pool, schema, 'check');
    const sizes: BackendResult['sizes'] = [];
    for (const [prefix, n] of sizesOf(args.records)) {
      const t0 = performance.now();
      await seedPostgres(pool, schema, prefix, 'index', n);
      const seedMs = performance.now() - t0;
      const fleet = postgresFleet({ pool, schema, prefix });
      await fileOneMore(fleet, n);
      await writeDependencyState(fleet);
      sizes.push({ records: n, seedMs, measured: await measure(fleet, n, args.rounds) });
    }
    const { rows } = await pool.query<{ bytes: string }>(
      `SELECT pg_total_relation_size('stormguard.dead_letters') + pg_total_relation_size('stormguard.attempt_states') AS bytes`,
    );
    return { backend: 'postgres', sizes, storeBytes: Number(rows[0]?.bytes ?? 0) };
  } finally {
    await pool.end();
    await db.drop();
    await server.close();
  }
}

/** The sizes measured: a tenth of `records`, then `records`, each under a prefix of its own. */
function sizesOf(records: number): [string, number][] {
  return [
    ['small', Math.max(1, Math.round(records / 10))],
    ['large', records],
  ];
}

/**
 * Files one more record through the store, on top of the seed: it must get the next id (the seed left the
 * counter where filings would have), and is removed again.
 */
async function fileOneMore(fleet: Fleet, n: number): Promise<void> {
  const filing = await fleet.deadLetters.file(record('index', n), FINAL_STATE, ATTEMPTS_TTL_MS);
  if (!filing.created || filing.id !== String(n + 1))
    throw new Error(`a filing after the seed got ${JSON.stringify(filing)}, expected id ${n + 1}`);
  if (!(await fleet.deadLetters.remove('index', filing.id)))
    throw new Error('the extra record was not removed');
}

/** The status sources as they listed before the registry: every listing a SCAN of the whole keyspace. */
function scanningStatus(redis: Redis, fleet: Fleet, prefix: string): FleetStatusSources {
  const budgets = new RedisBudgetStore({ redis, prefix });
  const breakers = new RedisBreakerStore({ redis, prefix });
  return {
    ...fleet.status,
    budget: {
      read: (dependency) => budgets.read(dependency),
      async dependencies() {
        const keys = await scanKeys(redis, budgetKeyPattern(prefix));
        return keys.flatMap((key) => dependencyOfBudgetKey(prefix, key) ?? []).sort();
      },
    },
    breaker: {
      // The SCAN the listing made, then the same reads of each breaker it found.
      async list() {
        await scanKeys(redis, dependencyKeyPattern(prefix, ':breaker'));
        return breakers.list();
      },
    },
  };
}

function printPages(result: BackendResult): void {
  const [small, large] = result.sizes;
  if (!small || !large) return;
  const ms = (s: Spread | undefined) => (s ? `${s.median.toFixed(1)} / ${s.p95.toFixed(1)} ms` : '');
  const seconds = (x: number) => `${(x / 1000).toFixed(1)} s`;
  console.log(
    `\n${result.backend}: ${DEPENDENCIES.length} dependencies with budget and breaker state; seeded in ${seconds(small.seedMs)} and ${seconds(large.seedMs)}; store ${(result.storeBytes / 2 ** 20).toFixed(0)} MiB`,
  );
  const rows = [
    [`median / p95 of ${args.rounds}`, `${small.records} records`, `${large.records} records`, 'goal'],
    ...PAGES.map(({ label }) => [
      `first page, ${label}`,
      ms(small.measured.pages[label]),
      ms(large.measured.pages[label]),
      '< 200 ms',
    ]),
    ['one overview update (read model)', ms(small.measured.overview), ms(large.measured.overview), '< 50 ms'],
    ...Object.keys(large.measured.extra).map((label) => [
      `  ${label}`,
      ms(small.measured.extra[label]),
      ms(large.measured.extra[label]),
      '',
    ]),
  ];
  console.log(formatTable(rows));
}

function printLive(run: SseRun): void {
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
  console.log(
    `\nlive pages, limit ${run.limit === 'on' ? '1 MiB per client' : 'off (baseline)'}: ${args.clients} clients, ${args.stalled} never reading; ${args.dependencies} dependencies (an update of ${kib(run.overviewBytes)}) every ${args.intervalMs} ms`,
  );
  const every = Math.max(1, Math.round(run.samples.length / 10));
  const rows = [
    [
      's',
      'RSS MiB',
      'heap MiB',
      'external MiB',
      'open',
      'dropped',
      'stalled max',
      'stalled total',
      'reader max',
      'kernel TCP MiB',
    ],
    ...run.samples
      .filter((_, i) => i % every === every - 1 || i === 0)
      .map((s) => [
        String(s.atS),
        s.rssMiB.toFixed(1),
        s.heapUsedMiB.toFixed(1),
        s.externalMiB.toFixed(1),
        String(s.open),
        String(s.dropped),
        kib(s.stalledMaxBytes),
        kib(s.stalledTotalBytes),
        kib(s.readerMaxBytes),
        s.kernelTcpMiB.toFixed(1),
      ]),
  ];
  console.log(formatTable(rows));
  const cut = run.drops.map((d) => d.bufferedBytes);
  console.log(
    `disconnected: ${run.drops.length} stalled clients${cut.length ? `, waiting for each when cut ${kib(Math.min(...cut))}–${kib(Math.max(...cut))}, at ${Math.min(...run.drops.map((d) => d.atS))}–${Math.max(...run.drops.map((d) => d.atS))} s` : ''}; reading clients dropped: ${run.readersDropped}, updates each got: ${run.readerUpdates.min}–${run.readerUpdates.max}`,
  );
}

function parseCommandLine() {
  const { values } = parseArgs({
    options: {
      records: { type: 'string', default: '1000000' },
      rounds: { type: 'string', default: '30' },
      backends: { type: 'string', default: 'redis,postgres' },
      part: { type: 'string', default: 'all' },
      seconds: { type: 'string', default: '30' },
      clients: { type: 'string', default: '50' },
      stalled: { type: 'string', default: '10' },
      dependencies: { type: 'string', default: '100' },
      'interval-ms': { type: 'string', default: '20' },
      json: { type: 'boolean', default: false },
    },
  });
  const whole = (
    name: 'records' | 'rounds' | 'seconds' | 'clients' | 'stalled' | 'dependencies' | 'interval-ms',
    min: number,
  ) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < min)
      fail(`--${name} must be a whole number >= ${min} (got "${values[name]}")`);
    return n;
  };
  const backends = (values.backends ?? '').split(',').map((b) => b.trim());
  if (backends.length === 0 || backends.some((b) => b !== 'redis' && b !== 'postgres'))
    fail(`--backends takes redis, postgres or both, comma-separated (got "${values.backends}")`);
  if (!['pages', 'sse', 'all'].includes(values.part ?? ''))
    fail(`--part takes pages, sse or all (got "${values.part}")`);
  const parsed = {
    records: whole('records', 100),
    rounds: whole('rounds', 1),
    backends: backends as ('redis' | 'postgres')[],
    part: values.part as 'pages' | 'sse' | 'all',
    seconds: whole('seconds', 1),
    clients: whole('clients', 1),
    stalled: whole('stalled', 0),
    dependencies: whole('dependencies', 1),
    intervalMs: whole('interval-ms', 1),
    json: values.json === true,
  };
  if (parsed.stalled > parsed.clients) fail('--stalled cannot be more than --clients');
  return parsed;
}

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}
