/**
 * One worker process of bench/fleet. Started once with the target's address; then, for each run the parent
 * sends: `start` builds a worker (bare BullMQ or stormguard's createWorker) without running it and answers
 * `ready`; `go` runs it and reports `progress` (jobs completed) every 50 ms; `stop` closes it (stormguard's
 * budget flushes its batched successes then, and those commands count) and answers `stopped` with the time
 * of the last completion and the CPU time this process spent from `go` to then. The stormguard side keeps one budget and one dead-letter store for the life of the
 * process, as a deployed worker does.
 *
 *   node --import tsx bench/fleet/worker-process.ts '<target address JSON>'
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'bullmq';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { presets } from '../../src/policy/presets.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { nowMs, reply, serve } from '../../tests/helpers/ipc-process.js';
import { connect, type TargetAddress } from '../redis-target.js';

/** What the parent asks one run to be. */
export interface FleetRun {
  queue: string;
  /** BullMQ prefix (hash-tagged on a cluster). */
  prefix: string;
  side: 'bare' | 'stormguard';
  /** Milliseconds each job takes (0: a no-op). */
  jobMs: number;
  concurrency: number;
}

const address = JSON.parse(process.argv[2] ?? '') as TargetAddress;
const stores = connect(address);
const budget = new RetryBudget({ store: new RedisBudgetStore({ redis: stores, prefix: 'app' }), log: false });
const deadLetters = new RedisDeadLetterStore({ redis: stores, prefix: 'app' });

let worker: Worker | undefined;
let connection: ReturnType<typeof connect> | undefined;
let completed = 0;
let lastCompletedAt = 0;
let progress: NodeJS.Timeout | undefined;
let cpuAtGo: NodeJS.CpuUsage | undefined;

serve(async (message) => {
  switch (message.type) {
    case 'start': {
      const run = message.run as FleetRun;
      completed = 0;
      lastCompletedAt = 0;
      connection = connect(address);
      const work = run.jobMs > 0 ? () => sleep(run.jobMs) : async () => {};
      worker =
        run.side === 'bare'
          ? new Worker(
              run.queue,
              async () => {
                await work();
                return 'ok';
              },
              { connection, prefix: run.prefix, concurrency: run.concurrency, autorun: false },
            )
          : createWorker(
              run.queue,
              async (_job, ctx) => {
                // A downstream call, as a real job makes: its success is counted in the budget (batched).
                await ctx.call('downstream', work);
                return 'ok';
              },
              {
                connection,
                policy: presets.idempotentInternal,
                deadLetters,
                budget,
                concurrency: run.concurrency,
                workerOptions: { prefix: run.prefix, autorun: false },
                onWarning: () => undefined,
              },
            );
      worker.on('completed', () => {
        completed++;
        lastCompletedAt = nowMs();
      });
      await worker.waitUntilReady();
      reply({ type: 'ready' });
      return;
    }
    case 'go': {
      cpuAtGo = process.cpuUsage();
      let reported = -1;
      progress = setInterval(() => {
        if (completed !== reported) reply({ type: 'progress', completed });
        reported = completed;
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
      connection?.disconnect();
      worker = undefined;
      const cpu = process.cpuUsage(cpuAtGo);
      reply({ type: 'stopped', completed, lastCompletedAt, cpuMicros: cpu.user + cpu.system });
      return;
    }
    case 'exit': {
      await budget.close();
      stores.disconnect();
      process.exit(0);
    }
  }
});
reply({ type: 'up' });
