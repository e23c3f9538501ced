/**
 * A search-indexing worker whose dependency goes down for a while, under a fleet-wide retry budget and a
 * dead-letter queue. While it runs, watch it from another terminal:
 *
 *   npx stormguard budget watch --redis redis://127.0.0.1:6379
 *   npx stormguard dlq list index --redis redis://127.0.0.1:6379
 *
 * Run:  npx tsx examples/flaky-dependency/index.ts --redis redis://127.0.0.1:6379
 * Options: --queue index, --rate 40 (jobs/s), --outage-at 15s, --outage-for 20s, --duration 0 (until Ctrl-C).
 */
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { definePolicy, formatDuration, parseDuration, RetryBudget, TransientError } from 'stormguard';
import { createWorker } from 'stormguard/bullmq';
import { RedisBudgetStore } from 'stormguard/redis';

const { values } = parseArgs({
  options: {
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    queue: { type: 'string', default: 'index' },
    rate: { type: 'string', default: '40' },
    'outage-at': { type: 'string', default: '15s' },
    'outage-for': { type: 'string', default: '20s' },
    duration: { type: 'string', default: '0' },
  },
});
const queueName = values.queue;
const rate = Number(values.rate);
const outageAtMs = parseDuration(values['outage-at'], '--outage-at');
const outageForMs = parseDuration(values['outage-for'], '--outage-for');
const durationMs = parseDuration(values.duration, '--duration');

// One connection for BullMQ (which needs maxRetriesPerRequest: null) and the budget store.
const redis = new Redis(values.redis, { maxRetriesPerRequest: null });
const startedAt = Date.now();

/** The search cluster: answers in 5–20 ms, fails 2 % of calls, and is down during the outage. */
const search = {
  isDown: () => {
    const t = Date.now() - startedAt;
    return t >= outageAtMs && t < outageAtMs + outageForMs;
  },
  async index(docId: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 15));
    if (search.isDown())
      throw Object.assign(new Error(`index ${docId}: connect ETIMEDOUT`), { code: 'ETIMEDOUT' });
    if (Math.random() < 0.02) throw new TransientError(`index ${docId}: 503 from a busy shard`);
  },
};

// Retries may be at most 20 % of the successes of the last 10 s, and never fewer than 5 per window.
const budget = new RetryBudget({
  store: new RedisBudgetStore({ redis }),
  windowMs: 10_000,
  ratio: 0.2,
  minAllowance: 5,
});

const worker = createWorker<{ docId: number }>(
  queueName,
  async (job, ctx) => {
    if (job.name === 'reindex') {
      // A call made without ctx.call: its failure is charged to the mapped dependency, `search`.
      await search.index(job.data.docId);
      return;
    }
    await ctx.call('search', () => search.index(job.data.docId));
  },
  {
    connection: redis,
    policy: definePolicy({
      name: 'search-indexing',
      maxAttempts: 5,
      backoff: { type: 'exponential', baseMs: '500ms', factor: 2, maxDelayMs: '8s' },
      jitter: 'full',
    }),
    budget,
    dependencies: { reindex: 'search' },
    concurrency: 20,
  },
);

const counts = { completed: 0, retries: 0, deadLetters: new Map<string, number>() };
worker.events.on('completed', () => counts.completed++);
worker.events.on('retry', () => counts.retries++);
worker.events.on('dead-letter', (e) =>
  counts.deadLetters.set(e.reason, (counts.deadLetters.get(e.reason) ?? 0) + 1),
);
worker.on('error', (error) => console.error('worker error:', error.message));

const queue = new Queue(queueName, { connection: redis });
let nextDoc = 0;
const producer = setInterval(() => {
  const batch = Array.from({ length: Math.max(1, Math.round(rate / 10)) }, () => {
    const docId = nextDoc++;
    return { name: docId % 10 === 0 ? 'reindex' : 'index', data: { docId } };
  });
  void queue.addBulk(batch);
}, 100);

const report = setInterval(async () => {
  const state = await budget.state('search');
  const dead = [...counts.deadLetters].map(([reason, n]) => `${reason} ${n}`).join(', ') || 'none';
  console.log(
    `${formatDuration(Date.now() - startedAt).padStart(7)}  search ${search.isDown() ? 'DOWN' : 'up  '}  ` +
      `completed ${counts.completed}  retries ${counts.retries}  dead letters: ${dead}  ` +
      `budget: allowance ${state.allowance} spent ${state.spent} denied ${state.denied}`,
  );
}, 1_000);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(producer);
  clearInterval(report);
  // Finishes the jobs in flight and flushes the budget's batched successes.
  await worker.close();
  await budget.close();
  await queue.close();
  redis.disconnect();
  console.log(
    `stopped after ${formatDuration(Date.now() - startedAt)}. Look at the dead letters, then replay them:\n` +
      `  npx stormguard dlq list ${queueName} --redis ${values.redis}\n` +
      `  npx stormguard dlq replay ${queueName} --when-healthy --budget-window 10s --budget-floor 5 --rate 50/s --redis ${values.redis}`,
  );
}
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
if (durationMs > 0) setTimeout(() => void stop(), durationMs);
console.log(
  `indexing ${rate} jobs/s into "${queueName}"; search goes down at ${formatDuration(outageAtMs)} for ${formatDuration(outageForMs)}. Ctrl-C stops.`,
);
