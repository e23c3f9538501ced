/**
 * The README's quick start, kept compiling: `npm test` type-checks this file against the built package.
 * Run it against a local Redis with `npx tsx examples/quick-start.ts` (Ctrl-C to stop).
 */
import { Redis } from 'ioredis';
import { presets, RetryBudget } from 'stormguard';
import { createWorker } from 'stormguard/bullmq';
import { RedisBudgetStore, RedisDeadLetterStore } from 'stormguard/redis';

// A stand-in for your own client.
const search = { index: async (docId: string) => ({ indexed: docId }) };

const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
});
// One budget for the whole fleet: retries ≤ 20 % of each dependency's successes over a sliding minute.
const budget = new RetryBudget({ store: new RedisBudgetStore({ redis: connection }), ratio: 0.2 });

const worker = createWorker<{ docId: string }>(
  'index',
  async (job, ctx) => {
    // Each call is attributed to its dependency: successes refill its budget, failures spend it.
    await ctx.call('search', () => search.index(job.data.docId));
  },
  {
    connection,
    policy: presets.idempotentInternal,
    budget,
    deadLetters: new RedisDeadLetterStore({ redis: connection }),
  },
);

process.once('SIGINT', async () => {
  await worker.close();
  await budget.close();
  connection.disconnect();
});
