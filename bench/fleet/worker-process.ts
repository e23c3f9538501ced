/**
 * One worker process of bench/fleet. Started once with its cell's address; then, for each run the parent
 * sends: `start` builds a worker (bare BullMQ or stormguard's createWorker) without running it and answers
 * `ready`; `go` runs it and reports `progress` (jobs ended: completed, or failed for good) every 50 ms; `stop` closes it (stormguard's
 * budget flushes its batched successes then, and those commands count) and answers `stopped` with the time
 * of the last completion, the CPU time this process spent from `go` to then, the jobs that ended failed
 * (not on purpose), the attempts that failed on purpose and, when asked, the Redis scripts its clients registered (to name them in a MONITOR breakdown).
 * The stormguard side keeps one budget and one dead-letter store for the life of the process, as a deployed
 * worker does; no limits, breaker, flow control or tracing.
 *
 * On the retry path every job's first attempt throws a transient error and its second succeeds: bare
 * BullMQ retries it through the job's `attempts: 2` and a fixed 10 ms backoff, stormguard through its
 * policy (a fixed 10 ms delay) and a budget whose floor grants every retry.
 *
 * With a profile folder, each measured run from `go` to `stopped` is profiled (V8's CPU profiler) and
 * written there as `<side>-<path>-<queue>-<pid>-<jobs this process ended>jobs.cpuprofile`.
 *
 *   node --import tsx bench/fleet/worker-process.ts '<cell address JSON>' [<profile folder>]
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import pg from 'pg';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import type { BudgetStore } from '../../src/budget/store.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { presets } from '../../src/policy/presets.js';
import { PostgresBudgetStore } from '../../src/postgres/budget-store.js';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import type { DeadLetterStore } from '../../src/runtime/contracts.js';
import { nowMs, reply, serve } from '../../tests/helpers/ipc-process.js';
import { connect } from '../redis-target.js';
import { type ScriptRegistry, scriptRegistry } from '../retry-path/monitor.js';
import { type FleetRun, queueConnection, RETRY_DELAY_MS } from './run.js';
import type { BackendAddress, CellAddress } from './servers.js';

const retryPolicy = definePolicy({
  name: 'fleet-retry',
  maxAttempts: 3,
  backoff: { type: 'fixed', delayMs: RETRY_DELAY_MS },
  jitter: 'none',
});

/** A transient failure, as a dependency that timed out throws. */
function transient(): Error {
  return Object.assign(new Error('downstream timed out'), { code: 'ETIMEDOUT' });
}

/** stormguard's stores for the life of the process. */
function storesOn(address: BackendAddress): {
  budget: BudgetStore;
  deadLetters: DeadLetterStore;
  client: Redis | Cluster | undefined;
  close(): Promise<void>;
} {
  if (address.kind === 'redis') {
    const redis = connect(address.target);
    return {
      budget: new RedisBudgetStore({ redis, prefix: 'app' }),
      deadLetters: new RedisDeadLetterStore({ redis, prefix: 'app' }),
      client: redis,
      close: async () => redis.disconnect(),
    };
  }
  const pool = new pg.Pool({ connectionString: address.url, max: 4 });
  return {
    budget: new PostgresBudgetStore({ connection: pool, prefix: 'app' }),
    deadLetters: new PostgresDeadLetterStore({ connection: pool, prefix: 'app' }),
    client: undefined,
    close: () => pool.end(),
  };
}

const address = JSON.parse(process.argv[2] ?? '') as CellAddress;
const profileDir = process.argv[3];
const profiler = profileDir ? new Session() : undefined;
profiler?.connect();
let profiled: FleetRun | undefined;
const stores = storesOn(address.stores);
// Every retry is granted (the floor covers them all): what the retry path measures is the cost of a grant.
const budget = new RetryBudget({ store: stores.budget, minAllowance: 1_000_000, log: false });

let worker: Worker | undefined;
let queue: Awaited<ReturnType<typeof queueConnection>> | undefined;
let completed = 0;
/** Jobs that ended failed, not on purpose. */
let lost = 0;
let failedOnPurpose = 0;
let lastCompletedAt = 0;
let progress: NodeJS.Timeout | undefined;
let cpuAtGo: NodeJS.CpuUsage | undefined;

serve(async (message) => {
  switch (message.type) {
    case 'start': {
      const run = message.run as FleetRun;
      profiled = run;
      completed = 0;
      lost = 0;
      failedOnPurpose = 0;
      lastCompletedAt = 0;
      queue = await queueConnection(address.queue);
      const work = run.jobMs > 0 ? () => sleep(run.jobMs) : async () => {};
      const retry = run.path === 'retry';
      const redisOnly = queue.backend === undefined ? { prefix: run.prefix } : {};
      const backendArgument = (queue.backend === undefined ? [] : [queue.backend]) as [];
      worker =
        run.side === 'bare'
          ? new Worker(
              run.queue,
              async (job) => {
                if (retry && job.attemptsMade === 0) {
                  failedOnPurpose++;
                  throw transient();
                }
                await work();
                return 'ok';
              },
              {
                connection: queue.connection as never,
                ...redisOnly,
                concurrency: run.concurrency,
                autorun: false,
              },
              ...backendArgument,
            )
          : createWorker(
              run.queue,
              async (_job, ctx) =>
                // A downstream call, as a real job makes: its success is counted in the budget (batched).
                ctx.call('downstream', async () => {
                  if (retry && ctx.attempt === 1) {
                    failedOnPurpose++;
                    throw transient();
                  }
                  await work();
                  return 'ok';
                }),
              {
                connection: queue.connection as never,
                ...(queue.backend === undefined ? {} : { backend: queue.backend as never }),
                policy: retry ? retryPolicy : presets.idempotentInternal,
                deadLetters: stores.deadLetters,
                budget,
                concurrency: run.concurrency,
                workerOptions: { ...redisOnly, autorun: false },
                onWarning: () => undefined,
              },
            );
      worker.on('completed', () => {
        completed++;
        lastCompletedAt = nowMs();
      });
      // A job that ends failed ends the run all the same (BullMQ 6's PostgreSQL backend fails a job whose
      // completion hit a deadlock between workers): the parent counts it and says so.
      worker.on('failed', (job) => {
        if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) {
          lost++;
          lastCompletedAt = nowMs();
        }
      });
      worker.on('error', (error) => process.stderr.write(`${run.side} worker: ${String(error)}\n`));
      await worker.waitUntilReady();
      reply({ type: 'ready' });
      return;
    }
    case 'go': {
      if (profiler && profiled?.profile) {
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.start');
      }
      cpuAtGo = process.cpuUsage();
      let reported = -1;
      progress = setInterval(() => {
        if (completed + lost !== reported) reply({ type: 'progress', completed: completed + lost });
        reported = completed + lost;
      }, 50);
      worker?.run().catch((error: unknown) => {
        process.stderr.write(`worker stopped: ${String(error)}\n`);
        process.exit(1);
      });
      return;
    }
    case 'stop': {
      clearInterval(progress);
      await worker?.close();
      const cpu = process.cpuUsage(cpuAtGo);
      if (profiler && profileDir && profiled?.profile) {
        const { profile } = await profiler.post('Profiler.stop');
        const name = `${profiled.side}-${profiled.path}-${profiled.queue}-${process.pid}-${completed + lost}jobs.cpuprofile`;
        writeFileSync(join(profileDir, name), JSON.stringify(profile));
      }
      const scripts: ScriptRegistry[] = [];
      if (message.scripts)
        for (const client of [queue?.client, stores.client]) if (client) scripts.push(scriptRegistry(client));
      queue?.close();
      worker = undefined;
      reply({
        type: 'stopped',
        completed,
        lost,
        failedOnPurpose,
        lastCompletedAt,
        cpuMicros: cpu.user + cpu.system,
        scripts,
      });
      return;
    }
    case 'exit': {
      await budget.close();
      await stores.close();
      process.exit(0);
    }
  }
});
reply({ type: 'up' });
