/**
 * A dead-letter store outage, in real time: `--jobs` jobs that each fail once (maxAttempts 1) on a BullMQ
 * queue on a redis-server this script starts on a free port, while their dead-letter store (a
 * `RedisDeadLetterStore` on that server, behind a switch that refuses every filing as a store that is down
 * does) is out for `--outage-s` seconds. The worker runs with the default bookkeeping backoff (5 s doubling
 * to 5 minutes). Prints how many jobs were filed, how often the processor ran, how many ended unfiled or in
 * BullMQ's failed set without a record, and how long after recovery the last record was filed.
 *
 * Goal (issue: "a 10-minute dead-letter-store outage must end with every job filed"): filed = jobs,
 * processor runs = jobs, unfiled = 0; the last filing within 5 minutes of recovery (the longest backoff).
 *
 *   npx tsx bench/worker/dead-letter-outage.ts [--jobs 200] [--outage-s 600] [--json]
 */
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createWorker } from '../../src/bullmq/worker.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import type { AttemptState, DeadLetterRecord } from '../../src/runtime/contracts.js';
import { TestRedis, waitFor } from '../../tests/helpers/redis-server.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '200' },
    'outage-s': { type: 'string', default: '600' },
    json: { type: 'boolean', default: false },
  },
});
const jobs = Number(values.jobs);
const outageMs = Number(values['outage-s']) * 1000;
if (!Number.isInteger(jobs) || jobs < 1 || !Number.isFinite(outageMs) || outageMs < 0) {
  process.stderr.write('--jobs must be a whole number >= 1 and --outage-s a number of seconds >= 0\n');
  process.exit(2);
}

/** The Redis store behind a switch: while `down`, every filing is refused as by a store that is down. */
class SwitchedStore extends RedisDeadLetterStore {
  down = false;
  refused = 0;
  override async file(record: DeadLetterRecord, state: AttemptState, ttlMs: number) {
    if (this.down) {
      this.refused += 1;
      throw Object.assign(new Error('connect ECONNREFUSED (dead-letter store down)'), {
        code: 'ECONNREFUSED',
      });
    }
    return super.file(record, state, ttlMs);
  }
}

const server = await TestRedis.start();
const connection = { ...server.connection, maxRetriesPerRequest: null };
const redis = new Redis(connection);
const queueName = 'outage';
const store = new SwitchedStore({ redis, prefix: 'outage' });
const queue = new Queue(queueName, { connection });
let runs = 0;
let unfiled = 0;
let lastFiledAt = 0;
const worker = createWorker(
  queueName,
  async () => {
    runs += 1;
    throw new TransientError('503 from the payment provider');
  },
  {
    connection,
    policy: definePolicy({
      name: 'once',
      maxAttempts: 1,
      maxAgeMs: outageMs + 3_600_000,
      backoff: { type: 'fixed', delayMs: 1_000 },
    }),
    deadLetters: store,
    concurrency: 20,
    workerOptions: { drainDelay: 1 },
  },
);
worker.on('error', () => {});
worker.events.on('unfiled', () => unfiled++);
worker.events.on('dead-letter', () => {
  lastFiledAt = Date.now();
});
try {
  store.down = true;
  const started = Date.now();
  await queue.addBulk(Array.from({ length: jobs }, (_, i) => ({ name: 'charge', data: { order: i } })));
  await waitFor(() => Date.now() - started >= outageMs, outageMs + 60_000, 'the outage', 1_000);
  store.down = false;
  const recoveredAt = Date.now();
  await waitFor(
    async () => (await store.count(queueName)) + unfiled >= jobs,
    10 * 60_000,
    'every job filed',
    500,
  );
  const failed = await queue.getFailed(0, -1);
  const withoutRecord = failed.filter((j) => !j.failedReason.startsWith('dead-lettered (')).length;
  const figures = {
    jobs,
    outageSeconds: outageMs / 1000,
    filed: await store.count(queueName),
    processorRuns: runs,
    refusedFilings: store.refused,
    unfiled,
    failedWithoutRecord: withoutRecord,
    lastFilingSecondsAfterRecovery: Math.max(0, (lastFiledAt - recoveredAt) / 1000),
  };
  if (values.json) process.stdout.write(`${JSON.stringify(figures)}\n`);
  else for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k.padEnd(32)} ${v}\n`);
  process.exitCode = figures.filed === jobs && runs === jobs && unfiled === 0 && withoutRecord === 0 ? 0 : 1;
} finally {
  await worker.close();
  await queue.close();
  redis.disconnect();
  await server.close();
}
