/**
 * One worker process of the failover run (tests/cluster/failover-run.ts): its own Cluster connections,
 * retry budget, dead-letter store and idempotency guard, and a createWorker on the run's queue. It tells the
 * parent over IPC what only it can see: each processor run, each side effect and idempotent completion, each
 * BullMQ completion, the budget's degraded decisions and outages, and refused bookkeeping writes. On
 * `status` it answers whether its budget is degraded; on `exit` it closes and exits.
 *
 *   node --import tsx tests/cluster/failover-worker.ts '<FailoverWorkerConfig JSON>'
 */
import { Cluster } from 'ioredis';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { PermanentError } from '../../src/errors/permanent-error.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { idempotencyGuard } from '../../src/idempotency/guard.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisIdempotencyStore } from '../../src/redis/idempotency-store.js';
import { type Message, reply, serve } from '../helpers/ipc-process.js';
import { KINDS } from './failover-run.js';

/** What the parent tells a worker process. */
export interface FailoverWorkerConfig {
  startupNodes: { host: string; port: number }[];
  /** stormguard's key prefix, and BullMQ's (hash-tagged). */
  prefix: string;
  bullPrefix: string;
  queue: string;
  dependency: string;
  durableWrites: boolean;
}

const config = JSON.parse(process.argv[2] ?? '') as FailoverWorkerConfig;
const client = (bullmq: boolean) => {
  const made = new Cluster(config.startupNodes, {
    slotsRefreshTimeout: 2_000,
    ...(bullmq ? { redisOptions: { maxRetriesPerRequest: null } } : {}),
  });
  made.on('error', () => undefined); // the failover is expected: connection errors are part of the run
  return made;
};
// IPC is asynchronous and ordered: the parent sees each event before this process's answer to `status`.
const tell = (message: Message) => reply(message);

const stores = client(false);
const connection = client(true);
const budget = new RetryBudget({
  store: new RedisBudgetStore({ redis: stores, prefix: config.prefix }),
  minAllowance: 1_000,
  probeIntervalMs: 200,
  log: false,
});
budget.events.on('granted', (result) => {
  if (result.degraded) tell({ type: 'granted-degraded' });
});
budget.events.on('denied', (result) => {
  if (result.degraded) tell({ type: 'denied-degraded' });
});
budget.events.on('degraded', () => tell({ type: 'degraded' }));
budget.events.on('recovered', ({ downForMs }) => tell({ type: 'recovered', downForMs }));
const guard = idempotencyGuard({
  store: new RedisIdempotencyStore(stores, { prefix: config.prefix, durableWrites: config.durableWrites }),
  inFlightTtlMs: 5_000,
  ttlMs: 3_600_000,
});
guard.events.on('outcome-not-stored', ({ key }) => tell({ type: 'outcome-not-stored', key }));
const policy = definePolicy({
  name: 'failover',
  maxAttempts: 4,
  backoff: { type: 'fixed', delayMs: 50 },
  jitter: 'none',
});

const worker = createWorker(
  config.queue,
  async (job, ctx) => {
    const kind = job.name as (typeof KINDS)[number];
    tell({ type: 'run', jobId: job.id, kind });
    if (kind === 'permanent') throw new PermanentError('the document is malformed');
    if (kind === 'flaky' && ctx.attempt === 1) throw new TransientError('search timed out');
    if (kind === 'once') {
      const key = `order-${job.id}`;
      await guard.once(key, () => {
        tell({ type: 'side-effect', key });
        return 'sent';
      });
      tell({ type: 'once-done', key });
    }
    return 'ok';
  },
  {
    connection,
    policy,
    deadLetters: new RedisDeadLetterStore({
      redis: stores,
      prefix: config.prefix,
      durableWrites: config.durableWrites,
    }),
    budget,
    dependencies: Object.fromEntries(KINDS.map((kind) => [kind, config.dependency])),
    concurrency: 8,
    workerOptions: { prefix: config.bullPrefix },
    onWarning: () => undefined,
  },
);
worker.on('error', () => tell({ type: 'bookkeeping-error' }));
worker.on('completed', (job) => tell({ type: 'completed', jobId: job.id }));

serve(async (message) => {
  if (message.type === 'status') tell({ type: 'status', degraded: budget.degraded });
  if (message.type === 'exit') {
    await worker.close();
    await budget.close();
    stores.disconnect();
    connection.disconnect();
    process.exit(0);
  }
});
await worker.waitUntilReady();
tell({ type: 'up' });
