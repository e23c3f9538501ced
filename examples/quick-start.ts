/**
 * The README's quick start, kept compiling: `npm test` type-checks this file against the built package.
 * Run it against a local Redis with `npx tsx examples/quick-start.ts` (Ctrl-C to stop).
 */
import { Redis } from 'ioredis';
import { presets, RetryBudget, retry } from 'stormguard';
import { createWorker, deadLetterQueue } from 'stormguard/bullmq';
import { RedisBudgetStore, RedisDeadLetterStore } from 'stormguard/redis';

// Stand-ins for your own clients.
const search = { index: async (docId: string) => ({ indexed: docId }) };
const crm = { fetchProfile: async (id: string) => ({ id }) };

const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
});

// One budget for the whole fleet, keyed by dependency: retries ≤ 20 % of successes over a sliding minute.
const budget = new RetryBudget({ store: new RedisBudgetStore({ redis: connection }), ratio: 0.2 });
// Where dead letters go: stormguard's own store, indexed by reason, dependency, job name and time.
const deadLetters = new RedisDeadLetterStore({ redis: connection });

const worker = createWorker<{ docId: string }>(
  'index',
  async (job, ctx) => {
    // Each downstream call is attributed to its dependency: successes refill that budget, failures spend it.
    await ctx.call('search', () => search.index(job.data.docId));
  },
  {
    connection,
    policy: presets.idempotentInternal,
    deadLetters,
    budget,
    dependencies: { reindex: 'search' },
  },
);

// What the budget refused, the ceiling exhausted or a permanent error stopped waits in the store:
const dlq = deadLetterQueue('index', { store: deadLetters, connection });
const report = await dlq.replay({ reason: 'budget-exhausted', ratePerSecond: 50 }); // after the incident
console.log(report);

// Outside a queue, `retry` does the same in-process.
const controller = new AbortController();
const profile = await retry(() => crm.fetchProfile('42'), presets.meteredApi, { signal: controller.signal });
console.log(profile);

process.once('SIGINT', async () => {
  await worker.close();
  await dlq.close();
  await budget.close();
  connection.disconnect();
});
