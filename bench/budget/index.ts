/**
 * The fleet-wide retry budget against the naive fixed-bucket design (bench/baselines/naive-budget.ts), both on
 * one redis-server this script spawns on a free port, measured in the same run; the throughput cells also
 * run a one-round-trip Lua reference (bench/baselines/lua-budget.ts: the same fixed buckets as one script
 * call per decision, a denial not spent) in the same alternated rounds:
 *
 * - trySpend decisions per second at concurrency 1, 16 and 64, over one connection and over four;
 * - round trips and Redis commands per decision;
 * - grants in the storm case: 1 000 successes, then 2 000 concurrent requests from 4 connections;
 * - grants for 100 retries after 500 more successes arrive behind that storm of denials;
 * - the allowance just before and just after a minute boundary under steady traffic (100 successes/s),
 *   and grants for a burst of 1 500 retries straddling it;
 * - round trips and Redis commands per successful job, with batching, at 1 000 jobs/s.
 *
 * Counts come from Redis itself (CONFIG RESETSTAT, then INFO commandstats). Round trips are the requests a
 * client sent: EVALSHA/EVAL for stormguard, GET/INCR/EXPIRE for the naive design (each awaited in turn);
 * its success path pipelines INCR+EXPIRE, so there one INCR is one round trip. "Commands" counts everything
 * Redis executed, including the commands inside stormguard's Lua scripts. The edge and burst cases run on
 * virtual time (the naive design's `now()`, stormguard's test-only time override); everything else runs on
 * real time, with stormguard reading the Redis server's clock.
 *
 * Throughput cells run `--rounds` times with the two designs in alternating order; each figure is the median
 * of its rounds, and the ratio the median of the paired rounds' ratios (the machine's other load moves
 * both sides of a pair alike). One more row measures stormguard's store without request sharing (one
 * script call per decision), to show what the script alone costs.
 *
 * Then the same on PostgreSQL (bench/budget/postgres.ts): `PostgresBudgetStore` against a naive SQL design on
 * a throw-away PostgreSQL, with the Redis store's decisions/s of this run beside it.
 *
 *   npx tsx bench/budget/index.ts [--ops 10000] [--rounds 3] [--json]
 */
import { Redis } from 'ioredis';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { budgetWindow } from '../../src/budget/window.js';
import { FakeClock } from '../../src/common/clock.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { TestRedis } from '../../tests/helpers/redis-server.js';
import { LuaBudget } from '../baselines/lua-budget.js';
import { NaiveBudget } from '../baselines/naive-budget.js';
import { benchArgs, formatTable, median } from '../common.js';
import { type PostgresResults, postgresBudgetBench, postgresReportRows } from './postgres.js';

const { size: OPS, rounds: ROUNDS, json } = benchArgs({ size: ['ops', 10_000, 100] });
const CONCURRENCIES = [1, 16, 64];
const CONNECTIONS = [1, 4];
const STORM = { successes: 1_000, requests: 2_000, later: 500, retries: 100 };
const MINUTE = 60_000;

type Design = 'stormguard' | 'naive';
const DESIGNS: Design[] = ['stormguard', 'naive'];
/**
 * How a throughput cell decides: the budget, the naive design, the one-round-trip Lua reference, or
 * stormguard's store one call per decision.
 */
type Decider = Design | 'lua' | 'stormguard-unshared';
/** The designs a throughput cell runs, in alternated order. */
const CELL_DESIGNS: Array<Design | 'lua'> = ['stormguard', 'naive', 'lua'];
/** The requests each design's client sends; everything else Redis counts ran inside a script. */
const CLIENT_COMMANDS: Record<Design | 'lua', string[]> = {
  stormguard: ['evalsha', 'eval'],
  naive: ['get', 'incr', 'expire'],
  lua: ['evalsha', 'eval'],
};

const server = await TestRedis.start();
const admin = new Redis(server.url);
const connections = Array.from({ length: 4 }, () => new Redis(server.url));
const progress = (text: string) => {
  if (process.stderr.isTTY) process.stderr.write(`${text}\n`);
};

/** Clears the data and Redis's command counters. */
async function reset(): Promise<void> {
  await admin.flushall();
  await admin.config('RESETSTAT');
}

/** Calls per command since the last reset, without this script's own INFO/CONFIG/FLUSHALL. */
async function commandStats(): Promise<Map<string, number>> {
  const info = await admin.info('commandstats');
  const calls = new Map<string, number>();
  for (const [, name, n] of info.matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) {
    if (/^(info|config|flushall)/.test(name!)) continue;
    calls.set(name!, Number(n));
  }
  return calls;
}

async function counts(design: Design | 'lua'): Promise<{ requests: number; commands: number }> {
  const stats = await commandStats();
  let commands = 0;
  for (const n of stats.values()) commands += n;
  const requests = CLIENT_COMMANDS[design].reduce((sum, name) => sum + (stats.get(name) ?? 0), 0);
  return { requests, commands };
}

/** A decision function per connection: `trySpend` for stormguard, `try_spend_retry` for the naive design. */
function deciders(
  design: Decider,
  connectionCount: number,
  clock?: FakeClock,
): Array<() => Promise<boolean>> {
  return connections.slice(0, connectionCount).map((redis) => {
    if (design === 'stormguard-unshared') {
      const store = new RedisBudgetStore({ redis, prefix: 'bench' });
      const window = budgetWindow({ ratio: 0.2, windowMs: 60_000, buckets: 10, minAllowance: 10 });
      return async () => (await store.trySpend('search', window, [], 1)).granted === 1;
    }
    if (design === 'naive') {
      const naive = new NaiveBudget(redis, clock ? { now: () => clock.now() / 1_000 } : {});
      return () => naive.trySpendRetry('search');
    }
    if (design === 'lua') {
      const lua = new LuaBudget(redis, clock ? { now: () => clock.now() / 1_000 } : {});
      return () => lua.trySpendRetry('search');
    }
    const budget = new RetryBudget({
      store: new RedisBudgetStore({ redis, prefix: 'bench', clock }),
      // The benchmark measures decisions, not the degraded path: a queue of 64 in-flight calls is not an outage.
      timeoutMs: 30_000,
    });
    return async () => (await budget.trySpend('search')).granted;
  });
}

/** Records `n` successes of 'search' the design's way (stormguard: batched and flushed; naive: one each). */
async function recordSuccesses(design: Design, n: number, clock?: FakeClock, redis = connections[0]!) {
  if (design === 'naive') {
    const naive = new NaiveBudget(redis, clock ? { now: () => clock.now() / 1_000 } : {});
    await Promise.all(Array.from({ length: n }, () => naive.recordSuccess('search')));
    return;
  }
  const budget = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix: 'bench', clock }) });
  budget.recordSuccess('search', n);
  await budget.close();
}

/** Runs `total` decisions with `concurrency` callers spread over the deciders; returns how many were granted. */
async function run(
  decide: Array<() => Promise<boolean>>,
  total: number,
  concurrency: number,
): Promise<number> {
  let started = 0;
  let granted = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      const call = decide[worker % decide.length]!;
      while (started < total) {
        started++;
        if (await call()) granted++;
      }
    }),
  );
  return granted;
}

interface Throughput {
  design: Decider;
  connections: number;
  concurrency: number;
  /** Median over the rounds. */
  decisionsPerSecond: number;
  /** Median over the rounds of this round's stormguard / naive ratio (stormguard rows only). */
  ratioToNaive?: number;
  /** Median over the rounds of this round's stormguard / Lua reference ratio (stormguard rows only). */
  ratioToLua?: number;
  roundTripsPerDecision: number;
  commandsPerDecision: number;
}

interface Round {
  decisionsPerSecond: number;
  roundTripsPerDecision: number;
  commandsPerDecision: number;
}

async function measureOnce(design: Decider, connectionCount: number, concurrency: number): Promise<Round> {
  const decide = deciders(design, connectionCount);
  await run(decide, 500, concurrency); // warm-up: script load, connection setup, JIT
  await reset();
  const total = concurrency === 1 ? Math.max(100, Math.round(OPS / 4)) : OPS;
  const started = performance.now();
  await run(decide, total, concurrency);
  const seconds = (performance.now() - started) / 1_000;
  const { requests, commands } = await counts(design === 'stormguard-unshared' ? 'stormguard' : design);
  return {
    decisionsPerSecond: Math.round(total / seconds),
    roundTripsPerDecision: requests / total,
    commandsPerDecision: commands / total,
  };
}

/** The three designs in one cell, `ROUNDS` rounds in alternating order. */
async function throughputCell(connectionCount: number, concurrency: number): Promise<Throughput[]> {
  const rounds: Record<Design | 'lua', Round[]> = { stormguard: [], naive: [], lua: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? [...CELL_DESIGNS].reverse() : CELL_DESIGNS;
    for (const design of order) rounds[design].push(await measureOnce(design, connectionCount, concurrency));
  }
  const ratio = (to: 'naive' | 'lua') =>
    median(rounds.stormguard.map((r, i) => r.decisionsPerSecond / rounds[to][i]!.decisionsPerSecond));
  return CELL_DESIGNS.map((design) => ({
    design,
    connections: connectionCount,
    concurrency,
    decisionsPerSecond: Math.round(median(rounds[design].map((r) => r.decisionsPerSecond))),
    ...(design === 'stormguard' ? { ratioToNaive: ratio('naive'), ratioToLua: ratio('lua') } : {}),
    roundTripsPerDecision: median(rounds[design].map((r) => r.roundTripsPerDecision)),
    commandsPerDecision: median(rounds[design].map((r) => r.commandsPerDecision)),
  }));
}

/** 1 000 successes, 2 000 concurrent requests from 4 connections, then 500 more successes and 100 retries. */
async function storm(design: Design): Promise<{ stormGrants: number; laterGrants: number }> {
  await reset();
  await recordSuccesses(design, STORM.successes);
  const decide = deciders(design, 4);
  const stormGrants = await run(decide, STORM.requests, STORM.requests);
  await recordSuccesses(design, STORM.later);
  const laterGrants = await run(decide, STORM.retries, 1);
  return { stormGrants, laterGrants };
}

/** Two minutes of 100 successes per second on virtual time, ending 1 ms before a minute boundary. */
async function steadyTraffic(design: Design): Promise<{ clock: FakeClock; boundary: number }> {
  await reset();
  const start = 1_700_000_040_000 - (1_700_000_040_000 % MINUTE);
  const clock = new FakeClock(start);
  for (let second = 0; second < 120; second++) {
    clock.set(start + second * 1_000 + 500);
    await recordSuccesses(design, 100, clock);
  }
  const boundary = start + 2 * MINUTE;
  clock.set(boundary - 1);
  return { clock, boundary };
}

async function allowanceNow(design: Design, clock: FakeClock): Promise<number> {
  if (design === 'naive')
    return new NaiveBudget(connections[0]!, { now: () => clock.now() / 1_000 }).allowance('search');
  const budget = new RetryBudget({
    store: new RedisBudgetStore({ redis: connections[0]!, prefix: 'bench', clock }),
  });
  return (await budget.state('search')).allowance;
}

async function edge(design: Design): Promise<{ before: number; after: number; burstGrants: number }> {
  const first = await steadyTraffic(design);
  const before = await allowanceNow(design, first.clock);
  first.clock.set(first.boundary + 1);
  const after = await allowanceNow(design, first.clock);
  // The burst: 750 retries 1 ms before the boundary, 750 more 1 ms after it.
  const second = await steadyTraffic(design);
  const decide = deciders(design, 1, second.clock);
  let burstGrants = await run(decide, 750, 16);
  second.clock.set(second.boundary + 1);
  burstGrants += await run(decide, 750, 16);
  return { before, after, burstGrants };
}

/** Two seconds of 1 000 jobs/s, each recording one success; counts what reached Redis per success. */
async function successPath(
  design: Design,
): Promise<{ roundTripsPerSuccess: number; commandsPerSuccess: number }> {
  await reset();
  const redis = connections[0]!;
  const naive = new NaiveBudget(redis);
  const budget = new RetryBudget({
    store: new RedisBudgetStore({ redis, prefix: 'bench' }),
    flushIntervalMs: 250,
  });
  let successes = 0;
  const pending: Promise<void>[] = [];
  await new Promise<void>((resolve) => {
    const started = performance.now();
    const tick = setInterval(() => {
      // Catch up to 1 000 per second of elapsed time (timers drift under load).
      const due = Math.min(2_000, Math.floor(performance.now() - started)) - successes;
      for (let i = 0; i < due; i++) {
        if (design === 'naive') pending.push(naive.recordSuccess('search'));
        else budget.recordSuccess('search');
      }
      successes += Math.max(0, due);
      if (successes >= 2_000) {
        clearInterval(tick);
        resolve();
      }
    }, 10);
  });
  await Promise.all(pending);
  await budget.close();
  const stats = await commandStats();
  let commands = 0;
  for (const n of stats.values()) commands += n;
  // Each naive success is one pipelined INCR+EXPIRE round trip; each stormguard flush one EVALSHA/EVAL.
  const roundTrips =
    design === 'naive' ? (stats.get('incr') ?? 0) : (stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0);
  return { roundTripsPerSuccess: roundTrips / successes, commandsPerSuccess: commands / successes };
}

const results = {
  throughput: [] as Throughput[],
  storm: {} as Record<Design, { stormGrants: number; laterGrants: number }>,
  edge: {} as Record<Design, { before: number; after: number; burstGrants: number }>,
  successPath: {} as Record<Design, { roundTripsPerSuccess: number; commandsPerSuccess: number }>,
  postgres: undefined as PostgresResults | undefined,
};

try {
  for (const connectionCount of CONNECTIONS)
    for (const concurrency of CONCURRENCIES) {
      progress(`throughput: ${connectionCount} connection(s), concurrency ${concurrency}`);
      results.throughput.push(...(await throughputCell(connectionCount, concurrency)));
    }
  progress('throughput: stormguard without request sharing');
  const unshared: Round[] = [];
  for (let round = 0; round < ROUNDS; round++) unshared.push(await measureOnce('stormguard-unshared', 4, 64));
  results.throughput.push({
    design: 'stormguard-unshared',
    connections: 4,
    concurrency: 64,
    decisionsPerSecond: Math.round(median(unshared.map((r) => r.decisionsPerSecond))),
    roundTripsPerDecision: median(unshared.map((r) => r.roundTripsPerDecision)),
    commandsPerDecision: median(unshared.map((r) => r.commandsPerDecision)),
  });
  for (const design of DESIGNS) {
    progress(`storm, edge and success path: ${design}`);
    results.storm[design] = await storm(design);
    results.edge[design] = await edge(design);
    results.successPath[design] = await successPath(design);
  }
} finally {
  admin.disconnect();
  for (const c of connections) c.disconnect();
  await server.close();
}
// After Redis is gone: the two servers never compete for the two cores.
results.postgres = await postgresBudgetBench({ ops: OPS, rounds: ROUNDS, progress });

if (json) {
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
} else {
  process.stdout.write(`${report()}\n`);
}

function report(): string {
  const rows: string[][] = [['', 'stormguard', 'naive', 'exact / goal', 'Lua reference', 'vs Lua']];
  const pick = (design: Decider, connectionCount: number, concurrency: number) =>
    results.throughput.find(
      (t) => t.design === design && t.connections === connectionCount && t.concurrency === concurrency,
    )!;
  for (const connectionCount of CONNECTIONS)
    for (const concurrency of CONCURRENCIES) {
      const ours = pick('stormguard', connectionCount, concurrency);
      const naive = pick('naive', connectionCount, concurrency);
      const lua = pick('lua', connectionCount, concurrency);
      const ratio = ours.ratioToNaive ?? 0;
      rows.push([
        `decisions/s, ${connectionCount} conn, concurrency ${concurrency}`,
        String(ours.decisionsPerSecond),
        String(naive.decisionsPerSecond),
        `${ratio.toFixed(2)}x${concurrency === 64 ? ' (goal >= 2x)' : ''}`,
        String(lua.decisionsPerSecond),
        `${(ours.ratioToLua ?? 0).toFixed(2)}x`,
      ]);
    }
  const at64 = (design: Decider) => pick(design, 4, 64);
  const unsharedRow = at64('stormguard-unshared');
  rows.push([
    'decisions/s, 4 conn, concurrency 64, one script call each',
    String(unsharedRow.decisionsPerSecond),
    String(at64('naive').decisionsPerSecond),
    `${(unsharedRow.decisionsPerSecond / at64('naive').decisionsPerSecond).toFixed(2)}x`,
  ]);
  rows.push([
    'round trips per decision, 4 conn, concurrency 64',
    fmt(at64('stormguard').roundTripsPerDecision),
    fmt(at64('naive').roundTripsPerDecision),
    '<= 1',
  ]);
  rows.push([
    'Redis commands per decision (incl. in scripts), same',
    fmt(at64('stormguard').commandsPerDecision),
    fmt(at64('naive').commandsPerDecision),
    '',
  ]);
  // Rows that compare the two designs' figures of one result, side by side.
  const side = <K extends string>(
    pickFrom: Record<Design, Record<K, number>>,
    field: K,
    label: string,
    goal: string,
    show: (n: number) => string = String,
  ) => rows.push([label, show(pickFrom.stormguard[field]), show(pickFrom.naive[field]), goal]);
  side(results.storm, 'stormGrants', 'grants: 1 000 successes, 2 000 requests', '200');
  side(results.storm, 'laterGrants', 'grants: 100 retries after 500 more successes', '100');
  side(results.edge, 'before', 'allowance 1 ms before a minute edge', '1200');
  side(results.edge, 'after', 'allowance 1 ms after it', '1200 (±1)');
  side(results.edge, 'burstGrants', 'grants: burst of 1 500 straddling the edge', '1200 (±1)');
  side(
    results.successPath,
    'roundTripsPerSuccess',
    'round trips per success at 1 000 jobs/s',
    '<= 0.01',
    fmt,
  );
  side(results.successPath, 'commandsPerSuccess', 'Redis commands per success (incl. in scripts)', '', fmt);
  const postgres = postgresReportRows(results.postgres!, at64('stormguard').decisionsPerSecond);
  return `${formatTable(rows)}\n\n${formatTable(postgres)}`;
}

function fmt(n: number): string {
  return n >= 0.1 ? n.toFixed(2) : n.toFixed(4);
}
