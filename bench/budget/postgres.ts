/**
 * The PostgreSQL half of bench/budget: `PostgresBudgetStore` against the naive SQL design
 * (bench/baselines/naive-sql-budget.ts: read the successes, then update the spend, in a transaction), both on
 * one throw-away PostgreSQL this script starts (the test harness's: initdb into a temporary folder, a free
 * loopback port, fsync off), over 8 connections each, measured in the same run:
 *
 * - decisions per second at concurrency 8 and 64 on a dependency with 1 000 successes in its window (200
 *   grants, then denials): stormguard through `RetryBudget` (concurrent requests for one dependency share
 *   a call), stormguard's store one call per decision, and the naive design;
 * - round trips per decision, counted by the server (pg_stat_statements: every top-level statement a
 *   client sent, BEGIN and COMMIT included);
 * - each over loopback and through a proxy that delays each direction by 1 ms (round trips of about 2 ms,
 *   as to a database in another availability zone), where what a round trip costs shows;
 * - exact grants under 8 concurrent connections: 1 000 successes, then 2 000 concurrent requests (the
 *   allowance is 200), then 500 more successes and 100 retries one after another (all 100 fit).
 *
 * Throughput cells run `rounds` times with the designs in alternating order; each figure is the median of
 * its rounds, the ratio the median of the paired rounds' ratios. Run through bench/budget/index.ts, which
 * prints these rows beside the Redis store's.
 */
import pg from 'pg';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { budgetWindow } from '../../src/budget/window.js';
import { PostgresBudgetStore } from '../../src/postgres/budget-store.js';
import { TestPostgres } from '../../tests/helpers/postgres-server.js';
import { NAIVE_SQL_TABLE, NaiveSqlBudget } from '../baselines/naive-sql-budget.js';
import { median } from '../common.js';
import { startLatencyProxy } from './latency-proxy.js';

/** The designs a PostgreSQL cell measures. */
export type PostgresDesign = 'stormguard' | 'stormguard-unshared' | 'naive-sql';
const DESIGNS: PostgresDesign[] = ['stormguard', 'stormguard-unshared', 'naive-sql'];
const CONNECTIONS = 8;
const CONCURRENCIES = [8, 64];
const STORM = { successes: 1_000, requests: 2_000, later: 500, retries: 100 };
const SCHEMA = 'bench';
/** Successes recorded before each throughput round (allowance 200, then denials). */
const SEED_SUCCESSES = 1_000;

/**
 * How the clients reach the server: directly over loopback, or through a proxy that delays each direction
 * by 1 ms (round trips of about 2 ms, as to a database in another availability zone).
 */
export type PostgresLink = 'loopback' | 'proxy-2ms';
const LINKS: PostgresLink[] = ['loopback', 'proxy-2ms'];
const PROXY_DELAY_MS = 1;

/** One design in one throughput cell. */
export interface PostgresThroughput {
  link: PostgresLink;
  design: PostgresDesign;
  connections: number;
  concurrency: number;
  /** Median over the rounds. */
  decisionsPerSecond: number;
  /** Median over the rounds of this round's design / naive-sql ratio (stormguard rows only). */
  ratioToNaive?: number;
  roundTripsPerDecision: number;
}

/** Grants in the storm case, per design (expected: 200 and 100). */
export interface PostgresStorm {
  stormGrants: number;
  laterGrants: number;
}

/** Everything the PostgreSQL half measures. */
export interface PostgresResults {
  server: string;
  throughput: PostgresThroughput[];
  storm: Record<PostgresDesign, PostgresStorm>;
}

interface Round {
  decisionsPerSecond: number;
  roundTripsPerDecision: number;
}

/**
 * Starts a PostgreSQL, measures, stops it. `ops` decisions per throughput round, `rounds` rounds a cell.
 *
 * @example
 * const results = await postgresBudgetBench({ ops: 10_000, rounds: 3, progress: console.error });
 */
export async function postgresBudgetBench(options: {
  ops: number;
  rounds: number;
  progress: (text: string) => void;
}): Promise<PostgresResults> {
  const server = await TestPostgres.start({
    settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'top' },
  });
  const admin = new pg.Pool({ connectionString: server.url(), max: 1 });
  const proxy = await startLatencyProxy(server.port, PROXY_DELAY_MS);
  const proxied = `postgres://postgres@127.0.0.1:${proxy.port}/postgres`;
  const pools = (url: string) => ({
    ours: new pg.Pool({ connectionString: url, max: CONNECTIONS }),
    naive: new pg.Pool({ connectionString: url, max: CONNECTIONS }),
  });
  const byLink = { loopback: pools(server.url()), 'proxy-2ms': pools(proxied) };
  try {
    await admin.query('CREATE EXTENSION pg_stat_statements');
    await admin.query(NAIVE_SQL_TABLE);
    const { rows } = await admin.query<{ server_version: string }>('SHOW server_version');
    const throughput: PostgresThroughput[] = [];
    for (const link of LINKS) {
      const bench = new Bench(admin, byLink[link].ours, byLink[link].naive);
      // Through the proxy every design is slower: fewer decisions keep the run short.
      const ops = link === 'loopback' ? options.ops : Math.max(500, Math.round(options.ops / 5));
      for (const concurrency of CONCURRENCIES) {
        options.progress(
          `postgres throughput (${link}): ${CONNECTIONS} connections, concurrency ${concurrency}`,
        );
        for (const row of await bench.cell(concurrency, ops, options.rounds))
          throughput.push({ link, ...row });
      }
    }
    const bench = new Bench(admin, byLink.loopback.ours, byLink.loopback.naive);
    const storm = {} as Record<PostgresDesign, PostgresStorm>;
    for (const design of DESIGNS) {
      options.progress(`postgres storm: ${design}`);
      storm[design] = await bench.storm(design);
    }
    return { server: `PostgreSQL ${rows[0]?.server_version}, fsync off`, throughput, storm };
  } finally {
    const all = [admin, ...Object.values(byLink).flatMap((p) => [p.ours, p.naive])];
    await Promise.all(all.map((pool) => pool.end()));
    await proxy.close();
    await server.close();
  }
}

class Bench {
  constructor(
    readonly admin: pg.Pool,
    readonly ours: pg.Pool,
    readonly naive: pg.Pool,
  ) {}

  /** Empties both designs' tables and the statement counters. */
  async reset(): Promise<void> {
    await this.admin.query('TRUNCATE naive_budget');
    await this.admin.query(`DELETE FROM ${SCHEMA}.budgets`).catch(() => undefined);
    await this.admin.query('SELECT pg_stat_statements_reset()');
  }

  /** Top-level statements clients sent since the last reset, without this script's own. */
  async roundTrips(): Promise<number> {
    const { rows } = await this.admin.query<{ n: string }>(
      `SELECT coalesce(sum(calls), 0) AS n FROM pg_stat_statements
        WHERE query NOT LIKE '%pg_stat_statements%' AND userid = (SELECT oid FROM pg_roles WHERE rolname = current_user)
          AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    return Number(rows[0]?.n);
  }

  /** A decision function: true when the retry was granted. */
  decider(design: PostgresDesign): () => Promise<boolean> {
    if (design === 'naive-sql') {
      const naive = new NaiveSqlBudget(this.naive);
      return () => naive.trySpendRetry('search');
    }
    const store = new PostgresBudgetStore({ connection: this.ours, schema: SCHEMA, prefix: 'bench' });
    if (design === 'stormguard-unshared') {
      const window = budgetWindow({ ratio: 0.2, windowMs: 60_000, buckets: 10, minAllowance: 10 });
      return async () => (await store.trySpend('search', window, [], 1)).granted === 1;
    }
    // The benchmark measures decisions, not the degraded path: 64 calls in flight is not an outage.
    const budget = new RetryBudget({ store, timeoutMs: 30_000 });
    return async () => (await budget.trySpend('search')).granted;
  }

  /** Records `n` successes of 'search' the design's way (stormguard: batched and flushed; naive: one each). */
  async recordSuccesses(design: PostgresDesign, n: number): Promise<void> {
    if (design === 'naive-sql') {
      await new NaiveSqlBudget(this.naive).recordSuccess('search', n);
      return;
    }
    const store = new PostgresBudgetStore({ connection: this.ours, schema: SCHEMA, prefix: 'bench' });
    const budget = new RetryBudget({ store });
    budget.recordSuccess('search', n);
    await budget.close();
  }

  async once(design: PostgresDesign, concurrency: number, ops: number): Promise<Round> {
    const decide = this.decider(design);
    await run(decide, 500, concurrency); // warm-up: connections, migrations, plan caches
    await this.reset();
    // A dependency with traffic behind it, so its row exists: what the naive design's FOR UPDATE locks
    // (on a missing row it locks nothing, and two transactions that both read "none spent" both grant).
    await this.recordSuccesses(design, SEED_SUCCESSES);
    await this.admin.query('SELECT pg_stat_statements_reset()');
    const started = performance.now();
    await run(decide, ops, concurrency);
    const seconds = (performance.now() - started) / 1_000;
    return {
      decisionsPerSecond: Math.round(ops / seconds),
      roundTripsPerDecision: (await this.roundTrips()) / ops,
    };
  }

  async cell(concurrency: number, ops: number, rounds: number): Promise<Omit<PostgresThroughput, 'link'>[]> {
    const measured: Record<PostgresDesign, Round[]> = {
      stormguard: [],
      'stormguard-unshared': [],
      'naive-sql': [],
    };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 ? [...DESIGNS].reverse() : DESIGNS;
      for (const design of order) measured[design].push(await this.once(design, concurrency, ops));
    }
    const naive = measured['naive-sql'];
    return DESIGNS.map((design) => ({
      design,
      connections: CONNECTIONS,
      concurrency,
      decisionsPerSecond: Math.round(median(measured[design].map((r) => r.decisionsPerSecond))),
      ...(design === 'naive-sql'
        ? {}
        : {
            ratioToNaive: median(
              measured[design].map((r, i) => r.decisionsPerSecond / naive[i]!.decisionsPerSecond),
            ),
          }),
      roundTripsPerDecision: median(measured[design].map((r) => r.roundTripsPerDecision)),
    }));
  }

  /** 1 000 successes, 2 000 concurrent requests over 8 connections, then 500 more successes and 100 retries. */
  async storm(design: PostgresDesign): Promise<PostgresStorm> {
    await this.reset();
    await this.recordSuccesses(design, STORM.successes);
    const decide = this.decider(design);
    const stormGrants = await run(decide, STORM.requests, STORM.requests);
    await this.recordSuccesses(design, STORM.later);
    const laterGrants = await run(decide, STORM.retries, 1);
    return { stormGrants, laterGrants };
  }
}

/** Runs `total` decisions with `concurrency` callers; returns how many were granted. */
async function run(decide: () => Promise<boolean>, total: number, concurrency: number): Promise<number> {
  let started = 0;
  let granted = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started < total) {
        started++;
        if (await decide()) granted++;
      }
    }),
  );
  return granted;
}

/**
 * The PostgreSQL rows of the report: label, stormguard, naive SQL, ratio or goal; with the Redis store's
 * decisions/s of the same run beside (`redisDecisionsPerSecond`, 4 connections, concurrency 64).
 */
export function postgresReportRows(results: PostgresResults, redisDecisionsPerSecond: number): string[][] {
  const rows: string[][] = [[`PostgreSQL (${results.server})`, 'stormguard', 'naive SQL', 'ratio / goal']];
  const pick = (link: PostgresLink, design: PostgresDesign, concurrency: number) =>
    results.throughput.find((t) => t.link === link && t.design === design && t.concurrency === concurrency)!;
  for (const link of LINKS)
    for (const concurrency of CONCURRENCIES)
      for (const design of ['stormguard', 'stormguard-unshared'] as const) {
        const ours = pick(link, design, concurrency);
        rows.push([
          `decisions/s, ${link}, ${CONNECTIONS} conn, concurrency ${concurrency}${design === 'stormguard' ? '' : ', one call each'}`,
          String(ours.decisionsPerSecond),
          String(pick(link, 'naive-sql', concurrency).decisionsPerSecond),
          `${(ours.ratioToNaive ?? 0).toFixed(2)}x (goal >= 2x)`,
        ]);
      }
  const trips = (design: PostgresDesign) => pick('loopback', design, 64).roundTripsPerDecision.toFixed(2);
  rows.push(['round trips per decision, concurrency 64', trips('stormguard'), trips('naive-sql'), '']);
  rows.push([
    'round trips per decision, one call each',
    trips('stormguard-unshared'),
    trips('naive-sql'),
    '1',
  ]);
  for (const design of ['stormguard', 'stormguard-unshared'] as const) {
    const suffix = design === 'stormguard' ? '' : ', one call each';
    rows.push([
      `grants: 1 000 successes, 2 000 requests, 8 conn${suffix}`,
      String(results.storm[design].stormGrants),
      String(results.storm['naive-sql'].stormGrants),
      '200',
    ]);
    rows.push([
      `grants: 100 retries after 500 more successes${suffix}`,
      String(results.storm[design].laterGrants),
      String(results.storm['naive-sql'].laterGrants),
      '100',
    ]);
  }
  rows.push([
    'Redis store, same run: decisions/s, loopback, 4 conn, concurrency 64',
    String(redisDecisionsPerSecond),
    '',
    '',
  ]);
  return rows;
}
