/**
 * What the dead-letter path costs, side by side with a baseline on the same redis-server (one this script
 * spawns on a free port):
 *
 * - filing a dead letter (`RedisDeadLetterStore.file`: record, four index entries, attempt state, retention,
 *   one script) against a bare BullMQ `queue.add` into a `<queue>-dlq` queue, the design it replaces;
 * - replaying (claim, add with a deduplication key, check, remove) against "add to the queue, then remove
 *   the record", which can lose or duplicate a job when interrupted;
 * - a filtered listing that does not grow with the queue: the 300 newest and the 300 oldest records with a
 *   rare job name, in a queue of `--records` and of 50 × `--records` records, as Redis time per record
 *   listed (INFO commandstats), against a scan of every record that keeps the matches (what a store
 *   without indexes does);
 * - counting with two filters (dependency and job name) in the same queues: the longest single script call
 *   and the Redis time in all of them (SLOWLOG), stormguard's chunked count against one call that walks the
 *   whole index (`bench/baselines/dead-letter-count-one-call.lua`, the script before it was chunked);
 * - the idempotency guard on fresh keys (`once`) against a hand-rolled SET NX + SET.
 *
 * Records per second and Redis commands per record (as INFO commandstats counts them: commands a Lua script
 * runs count too, so they are not round trips).
 *
 *   npx tsx bench/dlq/index.ts [--records 2000] [--rounds 3] [--json]
 */
import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { queueTag } from '../../src/common/keys.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { redisIdempotencyGuard } from '../../src/redis/idempotency-guard.js';
import type { DeadLetterRecord } from '../../src/runtime/contracts.js';
import { TestRedis } from '../../tests/helpers/redis-server.js';
import { benchArgs, formatTable, median } from '../common.js';

const { size: records, rounds, json } = benchArgs({ size: ['records', 2000] });

const server = await TestRedis.start();
const redis = new Redis(server.url, { maxRetriesPerRequest: null });
const connection = { ...server.connection, maxRetriesPerRequest: null };
let run = 0;
const STATE = { attempts: 1, deferrals: 0 };
const TTL_MS = 3_600_000;

function record(queue: string, i: number, name = 'reindex'): DeadLetterRecord {
  return {
    jobId: `doc-${i}`,
    queue,
    name,
    data: { docId: i },
    opts: { attempts: 5, backoff: { type: 'exponential', delay: 1_000 } },
    reason: 'budget-exhausted',
    detail: 'retry budget for search exhausted',
    lastError: {
      name: 'TransientError',
      message: 'timeout',
      classification: { retryable: true, reason: 'ETIMEDOUT' },
    },
    attemptsMade: 1,
    dependency: 'search',
    createdAt: i,
    deadLetteredAt: 1_700_000_000_000 + i,
    replays: 0,
  };
}

/** Redis's own counts: commands run and microseconds spent running them. */
async function redisStats(): Promise<{ calls: number; usec: number }> {
  const info = await redis.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const match of info.matchAll(/calls=(\d+),usec=(\d+)/g)) {
    calls += Number(match[1]);
    usec += Number(match[2]);
  }
  return { calls, usec };
}

interface Measurement {
  perSecond: number;
  commandsPer: number;
}

/** Times `work` over `count` items, counting Redis commands (the INFO call itself adds one). */
async function timed(count: number, work: () => Promise<void>): Promise<Measurement> {
  const before = await redisStats();
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1_000;
  const after = await redisStats();
  return { perSecond: count / seconds, commandsPer: (after.calls - before.calls - 1) / count };
}

/** Files `n` records into `queue`, 500 in flight at a time (setup, not measured). */
async function fill(store: RedisDeadLetterStore, queue: string, n: number, nameOf: (i: number) => string) {
  for (let i = 0; i < n; i += 500)
    await Promise.all(
      Array.from({ length: Math.min(500, n - i) }, (_, j) =>
        store.file(record(queue, i + j, nameOf(i + j)), STATE, TTL_MS),
      ),
    );
}

type Case = { name: string; stormguard: () => Promise<Measurement>; baseline: () => Promise<Measurement> };

const cases: Case[] = [
  {
    name: 'file a dead letter (store.file vs queue.add)',
    stormguard: async () => {
      const store = new RedisDeadLetterStore({ redis, prefix: `file-${run++}` });
      await store.registerQueue('index');
      return timed(records, async () => {
        for (let i = 0; i < records; i++) await store.file(record('index', i), STATE, TTL_MS);
      });
    },
    baseline: async () => {
      const bare = new Queue(`add-${run++}-dlq`, { connection });
      await bare.add('warm-up', {}, { jobId: 'warm-up' });
      const m = await timed(records, async () => {
        for (let i = 0; i < records; i++)
          await bare.add('reindex', record('index', i), { jobId: `dl-doc-${i}` });
      });
      await bare.close();
      return m;
    },
  },
  {
    name: 'replay (claim, add deduplicated, check, remove vs add-then-remove)',
    stormguard: async () => {
      const queue = `replay-${run++}`;
      const store = new RedisDeadLetterStore({ redis, prefix: queue });
      await fill(store, queue, records, () => 'reindex');
      const dlq = deadLetterQueue(queue, { store, connection });
      const m = await timed(records, async () => {
        const report = await dlq.replay();
        if (report.moved.length !== records) throw new Error(`moved ${report.moved.length} of ${records}`);
      });
      await dlq.close();
      return m;
    },
    baseline: async () => {
      const queue = `replay-${run++}`;
      const store = new RedisDeadLetterStore({ redis, prefix: queue });
      await fill(store, queue, records, () => 'reindex');
      const source = new Queue(queue, { connection });
      await source.waitUntilReady();
      const m = await timed(records, async () => {
        for (let cursor: string | undefined, more = true; more; ) {
          const page = await store.list(queue, { limit: 500, ...(cursor ? { cursor } : {}) });
          for (const r of page.records) {
            await source.add(r.name, r.data, { ...r.opts, jobId: `${r.jobId}-r1` });
            await store.remove(queue, r.id);
          }
          cursor = page.next;
          more = cursor !== undefined;
        }
      });
      await source.close();
      return m;
    },
  },
  {
    name: 'idempotency once, fresh key (guard vs SET NX + SET)',
    stormguard: async () => {
      const guard = redisIdempotencyGuard({ redis, prefix: `once-${run++}`, ttlMs: 60_000 });
      return timed(records, async () => {
        for (let i = 0; i < records; i++) await guard.once(`k${i}`, () => i);
      });
    },
    baseline: async () => {
      const prefix = `naive-${run++}`;
      return timed(records, async () => {
        for (let i = 0; i < records; i++) {
          const key = `${prefix}:k${i}`;
          if ((await redis.set(key, 'running', 'PX', 30_000, 'NX')) !== 'OK') continue;
          await redis.set(key, JSON.stringify({ value: i }), 'PX', 60_000);
        }
      });
    },
  },
];

/**
 * Redis µs per record listed for the 300 newest / oldest records named `rare` (every `size / 300`-th
 * record), in a queue of `size` records: the indexed listing, and a scan of every record for the baseline.
 */
async function filteredListing(size: number): Promise<{
  size: number;
  newest: number;
  oldest: number;
  scan: number;
  count: ScriptTimes;
  countBaseline: ScriptTimes;
}> {
  const queue = `scale-${run++}`;
  const store = new RedisDeadLetterStore({ redis, prefix: queue });
  const every = Math.max(1, Math.floor(size / 300));
  await fill(store, queue, size, (i) => (i % every === every - 1 ? 'rare' : 'common'));
  const usecPerRecord = async (list: () => Promise<number>) => {
    const samples: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const before = await redisStats();
      const listed = await list();
      const after = await redisStats();
      samples.push((after.usec - before.usec) / listed);
    }
    return median(samples);
  };
  const indexed = (newestFirst: boolean) => async () => {
    let listed = 0;
    let cursor: string | undefined;
    do {
      const page = await store.list(queue, {
        name: 'rare',
        limit: 300 - listed,
        newestFirst,
        ...(cursor ? { cursor } : {}),
      });
      listed += page.records.length;
      cursor = page.next;
    } while (cursor && listed < 300);
    return listed;
  };
  // The baseline reads every record (hash page by page) and keeps the 300 newest named `rare`.
  const scan = async () => {
    const keep: string[] = [];
    let cursor = '0';
    do {
      const [next, fields] = await redis.hscan(`${queueTag(queue, queue)}:dl:rec`, cursor, 'COUNT', 1_000);
      for (let i = 1; i < fields.length; i += 2)
        if ((JSON.parse(fields[i] as string) as DeadLetterRecord).name === 'rare')
          keep.push(fields[i - 1] as string);
      cursor = next;
    } while (cursor !== '0');
    return Math.min(300, keep.length);
  };
  const tag = queueTag(queue, queue);
  const expected = size - Math.floor(size / every);
  const chunked = () => store.count(queue, { dependency: 'search', name: 'common' });
  const oneCall = async () =>
    Number(
      await redis.eval(
        ONE_CALL_COUNT,
        5,
        `${tag}:dl:all`,
        `${tag}:dl:all`,
        `${tag}:dl:d:search`,
        `${tag}:dl:n:common`,
        `${tag}:dl:ix`,
        '-inf',
        '+inf',
        '011',
      ),
    );
  return {
    size,
    newest: await usecPerRecord(indexed(true)),
    oldest: await usecPerRecord(indexed(false)),
    scan: await usecPerRecord(scan),
    count: await scriptTimes(chunked, expected),
    countBaseline: await scriptTimes(oneCall, expected),
  };
}

/** The baseline count: one script call that walks the whole index. */
const ONE_CALL_COUNT = readFileSync(
  new URL('../baselines/dead-letter-count-one-call.lua', import.meta.url),
  'utf8',
);

interface ScriptTimes {
  /** The longest single script call, µs of Redis time (median over the rounds). */
  longestUs: number;
  /** Redis time of all its script calls, µs (median). */
  totalUs: number;
  calls: number;
}

/** What `count` costs Redis, from SLOWLOG (every command logged while it runs); checks its answer. */
async function scriptTimes(count: () => Promise<number>, expected: number): Promise<ScriptTimes> {
  const samples: ScriptTimes[] = [];
  await count(); // warm-up: loads the script
  await redis.config('SET', 'slowlog-max-len', '100000');
  try {
    for (let round = 0; round < rounds; round++) {
      await redis.config('SET', 'slowlog-log-slower-than', '0');
      await redis.slowlog('RESET');
      const got = await count();
      await redis.config('SET', 'slowlog-log-slower-than', '10000');
      if (got !== expected) throw new Error(`counted ${got}, expected ${expected}`);
      const entries = (await redis.slowlog('GET', 100_000)) as [number, number, number, string[]][];
      const scripts = entries.filter((e) => /^eval/i.test(String(e[3][0])));
      samples.push({
        longestUs: Math.max(...scripts.map((e) => e[2])),
        totalUs: scripts.reduce((n, e) => n + e[2], 0),
        calls: scripts.length,
      });
    }
  } finally {
    await redis.config('SET', 'slowlog-log-slower-than', '10000');
  }
  return {
    longestUs: median(samples.map((s) => s.longestUs)),
    totalUs: median(samples.map((s) => s.totalUs)),
    calls: median(samples.map((s) => s.calls)),
  };
}

const rows: {
  operation: string;
  stormguardPerSecond: number;
  baselinePerSecond: number;
  ratio: number;
  stormguardCommandsPer: number;
  baselineCommandsPer: number;
}[] = [];
const scaling: Awaited<ReturnType<typeof filteredListing>>[] = [];
try {
  for (const c of cases) {
    const s: Measurement[] = [];
    const b: Measurement[] = [];
    // One discarded warm-up round (JIT, script cache), then interleaved rounds, so drift (other load,
    // Redis memory) hits both sides alike.
    await c.baseline();
    await c.stormguard();
    for (let round = 0; round < rounds; round++) {
      b.push(await c.baseline());
      s.push(await c.stormguard());
    }
    const guarded = median(s.map((m) => m.perSecond));
    const baseline = median(b.map((m) => m.perSecond));
    rows.push({
      operation: c.name,
      stormguardPerSecond: Math.round(guarded),
      baselinePerSecond: Math.round(baseline),
      ratio: Number((guarded / baseline).toFixed(2)),
      stormguardCommandsPer: Number(median(s.map((m) => m.commandsPer)).toFixed(2)),
      baselineCommandsPer: Number(median(b.map((m) => m.commandsPer)).toFixed(2)),
    });
  }
  for (const size of [records, records * 50]) scaling.push(await filteredListing(size));
} finally {
  redis.disconnect();
  await server.close();
}

if (json) {
  process.stdout.write(`${JSON.stringify({ records, rounds, rows, filteredListing: scaling }, null, 2)}\n`);
} else {
  process.stdout.write(`${records} records per run, median of ${rounds} interleaved rounds, one client\n\n`);
  // Commands as Redis counts them (INFO commandstats): those a Lua script runs count too.
  const header = ['operation', 'stormguard/s', 'baseline/s', 'ratio', 'stormguard cmds', 'baseline cmds'];
  const table = rows.map((r) => [
    r.operation,
    String(r.stormguardPerSecond),
    String(r.baselinePerSecond),
    `${r.ratio.toFixed(2)}×`,
    r.stormguardCommandsPer.toFixed(2),
    r.baselineCommandsPer.toFixed(2),
  ]);
  process.stdout.write(`${formatTable([header, ...table])}\n\n`);
  process.stdout.write('Filtered listing, 300 records named "rare": Redis µs per record listed\n\n');
  const scaleRows = scaling.map((s) => [
    String(s.size),
    s.newest.toFixed(1),
    s.oldest.toFixed(1),
    s.scan.toFixed(1),
  ]);
  process.stdout.write(
    `${formatTable([['records in the queue', 'newest 300', 'oldest 300', 'scan (baseline)'], ...scaleRows])}\n`,
  );
  process.stdout.write(
    '\nCount with two filters (dependency and name, every record but the "rare" ones): Redis µs per script call\n\n',
  );
  const countRows = scaling.map((s) => [
    String(s.size),
    String(s.count.longestUs),
    String(s.count.totalUs),
    String(s.count.calls),
    String(s.countBaseline.longestUs),
    String(s.countBaseline.totalUs),
    String(s.countBaseline.calls),
  ]);
  process.stdout.write(
    `${formatTable([['records in the queue', 'longest call', 'all calls', 'calls', 'one call (baseline): longest', 'all', 'calls'], ...countRows])}\n`,
  );
}
