/**
 * What safety costs on the dead-letter path, side by side with the naive way on the same redis-server (one
 * this script spawns on a free port): filing dead letters (`dlq.add` against a bare BullMQ `queue.add`),
 * replaying them (the atomic WATCH/MULTI move against "add to the source queue, then remove the record",
 * which can lose or duplicate a job when interrupted) and the idempotency guard on fresh keys (`once`
 * against a hand-rolled SET NX + SET). Records per second and Redis commands per record (as INFO
 * commandstats counts them: commands a Lua script runs count too, so they are not round trips).
 *
 *   npx tsx bench/dlq/index.ts [--records 2000] [--rounds 3] [--json]
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { deadLetterJobId } from '../../src/bullmq/dead-letter-ids.js';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { idempotencyGuard } from '../../src/bullmq/idempotency-guard.js';
import type { DeadLetterRecord } from '../../src/bullmq/types.js';
import { TestRedis } from '../../tests/helpers/redis-server.js';
import { benchArgs, formatTable, median } from '../common.js';

const { size: records, rounds, json } = benchArgs({ size: ['records', 2000] });

const server = await TestRedis.start();
const redis = new Redis(server.url, { maxRetriesPerRequest: null });
const connection = { ...server.connection, maxRetriesPerRequest: null };
let run = 0;

function record(queue: string, i: number): DeadLetterRecord {
  return {
    jobId: `doc-${i}`,
    queue,
    name: 'reindex',
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
    createdAt: 0,
    deadLetteredAt: 0,
    replays: 0,
  };
}

async function commandCount(): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/calls=(\d+)/g)) total += Number(match[1]);
  return total;
}

interface Measurement {
  perSecond: number;
  commandsPer: number;
}

/** Times `work` over `records` items, counting Redis commands (the INFO call itself adds one). */
async function timed(work: () => Promise<void>): Promise<Measurement> {
  const before = await commandCount();
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1_000;
  const commands = (await commandCount()) - before - 1;
  return { perSecond: records / seconds, commandsPer: commands / records };
}

type Case = { name: string; stormguard: () => Promise<Measurement>; baseline: () => Promise<Measurement> };

const cases: Case[] = [
  {
    name: 'file a dead letter (dlq.add vs queue.add)',
    stormguard: async () => {
      const queue = `add-${run++}`;
      const dlq = deadLetterQueue(queue, { connection });
      await dlq.add(record(queue, -1)); // the first add pauses the queue once; not part of the figure
      const m = await timed(async () => {
        for (let i = 0; i < records; i++) await dlq.add(record(queue, i));
      });
      await dlq.close();
      return m;
    },
    baseline: async () => {
      const queue = `add-${run++}`;
      const bare = new Queue(`${queue}-dlq`, { connection });
      await bare.add('warm-up', {}, { jobId: 'warm-up' });
      const m = await timed(async () => {
        for (let i = 0; i < records; i++)
          await bare.add('reindex', record(queue, i), { jobId: deadLetterJobId(`doc-${i}`) });
      });
      await bare.close();
      return m;
    },
  },
  {
    name: 'replay (atomic move vs add-then-remove)',
    stormguard: async () => {
      const queue = `replay-${run++}`;
      const dlq = deadLetterQueue(queue, { connection });
      for (let i = 0; i < records; i++) await dlq.add(record(queue, i));
      const m = await timed(async () => {
        const report = await dlq.replay();
        if (report.moved.length !== records) throw new Error(`moved ${report.moved.length} of ${records}`);
      });
      await dlq.close();
      return m;
    },
    baseline: async () => {
      const queue = `replay-${run++}`;
      const dlq = deadLetterQueue(queue, { connection });
      for (let i = 0; i < records; i++) await dlq.add(record(queue, i));
      const source = new Queue(queue, { connection });
      await source.waitUntilReady();
      const m = await timed(async () => {
        for (const r of await dlq.list()) {
          await source.add(r.name, r.data, { ...r.opts, jobId: `${r.jobId}-r1` });
          await dlq.queue.remove(deadLetterJobId(r.jobId));
        }
      });
      await source.close();
      await dlq.close();
      return m;
    },
  },
  {
    name: 'idempotency once, fresh key (guard vs SET NX + SET)',
    stormguard: async () => {
      const guard = idempotencyGuard({ redis, prefix: `once-${run++}`, ttlMs: 60_000 });
      return timed(async () => {
        for (let i = 0; i < records; i++) await guard.once(`k${i}`, () => i);
      });
    },
    baseline: async () => {
      const prefix = `naive-${run++}`;
      return timed(async () => {
        for (let i = 0; i < records; i++) {
          const key = `${prefix}:k${i}`;
          if ((await redis.set(key, 'running', 'PX', 30_000, 'NX')) !== 'OK') continue;
          await redis.set(key, JSON.stringify({ value: i }), 'PX', 60_000);
        }
      });
    },
  },
];

const rows: {
  operation: string;
  stormguardPerSecond: number;
  baselinePerSecond: number;
  ratio: number;
  stormguardCommandsPer: number;
  baselineCommandsPer: number;
}[] = [];
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
} finally {
  redis.disconnect();
  await server.close();
}

if (json) {
  process.stdout.write(`${JSON.stringify({ records, rounds, rows }, null, 2)}\n`);
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
  process.stdout.write(`${formatTable([header, ...table])}\n`);
}
