/**
 * Filing dead letters at the retention limit while others remove records, as a fleet does during an outage
 * that an automatic replay and an operator are cleaning up. Each store's queue is registered with
 * `maxCount` = `--limit` and filled to it, so every filing evicts the oldest record; the removers go for the
 * same oldest records:
 *
 * - without removers: 4 filers for `--seconds`;
 * - with removers: the same 4 filers beside 4 removers (2 replay-style: list the oldest page, claim,
 *   completeReplay; 1 purge-style: list the oldest page, remove; 1 console-style delete of the newest).
 *
 * Stores: PostgreSQL (this version's functions, one lock order: the queue's row, then its records), the
 * same store with the functions of `004-dead-letters.sql` put back (the baseline: a remove deleted its
 * record and then took the queue's row, a filing the other way round, so they deadlocked), and Redis
 * (one script per operation, so nothing to deadlock; for scale). Servers are the test harness's, started on
 * free loopback ports (PostgreSQL with fsync off). Figures: filings and removes per second and how many of
 * each failed (PostgreSQL's "deadlock detected" among them), medians over `--rounds` rounds.
 *
 *   npx tsx bench/dlq-retention/index.ts [--seconds 5] [--rounds 3] [--json]
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { migrate } from '../../src/postgres/migrations.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import type { DeadLetterRecord, DeadLetterStore } from '../../src/runtime/contracts.js';
import { TestPostgres } from '../../tests/helpers/postgres-server.js';
import { TestRedis } from '../../tests/helpers/redis-server.js';
import { benchArgs, formatTable, median } from '../common.js';

const { size: seconds, rounds, json } = benchArgs({ size: ['seconds', 5] });
const LIMIT = 1_000;
const FILERS = 4;
const STATE = { attempts: 1, deferrals: 0 };
const TTL_MS = 3_600_000;

type StoreName = 'postgres' | 'postgres-004-baseline' | 'redis';
const STORES: StoreName[] = ['postgres', 'postgres-004-baseline', 'redis'];

interface Cell {
  store: StoreName;
  removers: boolean;
  filingsPerSecond: number;
  filingFailures: number;
  removesPerSecond: number;
  removeFailures: number;
  /** The first failure's message, when there was one. */
  firstError?: string;
}

let runs = 0;
let seq = 0;

function record(queue: string): DeadLetterRecord {
  const i = seq++;
  return {
    queue,
    jobId: `doc-${i}`,
    createdAt: i,
    name: 'reindex',
    data: { docId: i },
    opts: { attempts: 5 },
    reason: 'budget-exhausted',
    detail: 'retry budget for search exhausted',
    lastError: {
      name: 'TransientError',
      message: 'timeout',
      classification: { retryable: true, reason: 'ETIMEDOUT' },
    },
    attemptsMade: 1,
    dependency: 'search',
    deadLetteredAt: 1_700_000_000_000 + i,
    replays: 0,
  };
}

/** The 004 versions of the two functions 011 replaced: the lock order that deadlocked. */
function functionsOf004(schema: string): string {
  const sql = readFileSync(new URL('../../src/postgres/sql/004-dead-letters.sql', import.meta.url), 'utf8');
  const pick = (name: string) => {
    const start = sql.indexOf(`CREATE FUNCTION {{schema}}.${name}(`);
    const end = sql.indexOf('$$;', sql.indexOf('AS $$', start) + 5) + 3;
    return sql.slice(start, end).replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION');
  };
  return [pick('dead_letter_remove'), pick('dead_letter_file')].join('\n').replaceAll('{{schema}}', schema);
}

async function measure(
  store: DeadLetterStore,
  queue: string,
  name: StoreName,
  removers: boolean,
  forSeconds = seconds,
): Promise<Cell> {
  await store.registerQueue(queue, { maxCount: LIMIT });
  for (let i = 0; i < LIMIT; i += 100)
    await Promise.all(Array.from({ length: 100 }, () => store.file(record(queue), STATE, TTL_MS)));
  const counts = { filings: 0, filingFailures: 0, removes: 0, removeFailures: 0 };
  let firstError: string | undefined;
  const failed = (error: unknown) => {
    firstError ??= error instanceof Error ? error.message : String(error);
  };
  const until = performance.now() + forSeconds * 1_000;
  const filer = async () => {
    while (performance.now() < until) {
      try {
        await store.file(record(queue), STATE, TTL_MS);
        counts.filings++;
      } catch (error) {
        counts.filingFailures++;
        failed(error);
      }
    }
  };
  const remover =
    (take: (id: string) => Promise<boolean>, newestFirst = false) =>
    async () => {
      while (performance.now() < until) {
        try {
          const page = await store.list(queue, { limit: 10, newestFirst });
          for (const r of page.records) if (await take(r.id)) counts.removes++;
        } catch (error) {
          counts.removeFailures++;
          failed(error);
        }
      }
    };
  const replay = remover(async (id) => {
    const claim = await store.claimReplay(queue, id, `replay-${id}`);
    return claim !== undefined && (await store.completeReplay(queue, id));
  });
  const purge = remover(async (id) => store.remove(queue, id));
  const del = remover(async (id) => store.remove(queue, id), true);
  const started = performance.now();
  await Promise.all([
    ...Array.from({ length: FILERS }, () => filer()),
    ...(removers ? [replay(), replay(), purge(), del()] : []),
  ]);
  const elapsed = (performance.now() - started) / 1_000;
  return {
    store: name,
    removers,
    filingsPerSecond: counts.filings / elapsed,
    filingFailures: counts.filingFailures,
    removesPerSecond: counts.removes / elapsed,
    removeFailures: counts.removeFailures,
    ...(firstError === undefined ? {} : { firstError }),
  };
}

const pgServer = await TestPostgres.start();
const redisServer = await TestRedis.start();
const pool = new pg.Pool({ connectionString: pgServer.url(), max: 8 });
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
const cells: Cell[][] = [];
try {
  await migrate(pool, 'bench');
  await migrate(pool, 'bench_baseline');
  await pool.query(functionsOf004('bench_baseline'));
  const open = (name: StoreName): DeadLetterStore =>
    name === 'redis'
      ? new RedisDeadLetterStore({ redis, prefix: `retention-${runs}` })
      : new PostgresDeadLetterStore({
          connection: pool,
          schema: name === 'postgres' ? 'bench' : 'bench_baseline',
          prefix: `retention-${runs}`,
        });
  // A warm-up cell first, then the stores in a rotated order each round, so none always runs cold or first.
  runs++;
  await measure(open('postgres-004-baseline'), 'warm-up', 'postgres-004-baseline', false, 1);
  for (let round = 0; round < rounds; round++)
    for (const name of [...STORES.slice(round % STORES.length), ...STORES.slice(0, round % STORES.length)])
      for (const removers of [false, true]) {
        runs++;
        process.stderr.write(
          `round ${round + 1}/${rounds}: ${name}, ${removers ? 'with' : 'without'} removers\n`,
        );
        const cell = await measure(open(name), `q${runs}`, name, removers);
        const i = STORES.indexOf(name) * 2 + (removers ? 1 : 0);
        cells[i] = [...(cells[i] ?? []), cell];
      }
} finally {
  await pool.end();
  redis.disconnect();
  await redisServer.close();
  await pgServer.close();
}

const rows = cells.map((measured) => {
  const first = measured[0] as Cell;
  const errors = measured.map((c) => c.firstError).find((e) => e !== undefined);
  return {
    store: first.store,
    removers: first.removers,
    filingsPerSecond: Math.round(median(measured.map((c) => c.filingsPerSecond))),
    filingFailures: median(measured.map((c) => c.filingFailures)),
    removesPerSecond: Math.round(median(measured.map((c) => c.removesPerSecond))),
    removeFailures: median(measured.map((c) => c.removeFailures)),
    ...(errors === undefined ? {} : { firstError: errors }),
  };
});

if (json) {
  process.stdout.write(
    `${JSON.stringify({ seconds, rounds, limit: LIMIT, filers: FILERS, removers: 4, rows }, null, 2)}\n`,
  );
} else {
  process.stdout.write(
    `queue at maxCount ${LIMIT}, ${FILERS} filers, ${seconds} s per cell, median of ${rounds} rounds; removers: 2 replay, 1 purge, 1 delete\n\n`,
  );
  const byStore = STORES.map((name) => {
    const without = rows.find((r) => r.store === name && !r.removers);
    const withRemovers = rows.find((r) => r.store === name && r.removers);
    return [
      name,
      String(without?.filingsPerSecond ?? ''),
      String(withRemovers?.filingsPerSecond ?? ''),
      String(withRemovers?.filingFailures ?? ''),
      String(withRemovers?.removesPerSecond ?? ''),
      String(withRemovers?.removeFailures ?? ''),
    ];
  });
  const header = [
    'store',
    'filings/s alone',
    'filings/s with removers',
    'failed filings',
    'removes/s',
    'failed removes',
  ];
  process.stdout.write(`${formatTable([header, ...byStore])}\n`);
  const errors = rows.filter((r) => r.firstError !== undefined);
  for (const r of errors) process.stdout.write(`\n${r.store}: first failure: ${r.firstError}`);
  if (errors.length > 0) process.stdout.write('\n');
}
