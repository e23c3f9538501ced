/**
 * One worker process of bench/limits. Started once with the redis-server's address; then, for each run the
 * parent sends: `start` builds a stormguard worker (not running yet) whose jobs each make one call to the
 * `api` dependency over HTTP, with `limits: { api: { maxInFlight } }` or without, and answers `ready`; `go`
 * runs it and reports `progress` (jobs completed) every 50 ms; `stop` closes it (its last give-backs go out
 * then, and count) and answers `stopped` with the time of the last completion, the CPU time this process
 * spent from `go` to then, and the limits store's round trips (its `exchangeLimits` and `limitState` calls).
 *
 *   node --import tsx bench/limits/worker-process.ts '<target address JSON>'
 */
import { createWorker, type StormguardWorker } from '../../src/bullmq/worker.js';
import { presets } from '../../src/policy/presets.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import type { LimitStore } from '../../src/runtime/limits/store.js';
import { nowMs, reply, serve } from '../../tests/helpers/ipc-process.js';
import { connect, type TargetAddress } from '../redis-target.js';

/** What the parent asks one run to be. */
export interface LimitsRun {
  queue: string;
  /** The flow store's prefix (a fresh one per run: no state carried over). */
  prefix: string;
  /** `undefined`: no limits. */
  maxInFlight: number | undefined;
  concurrency: number;
  /** The dependency: each call is `GET <url>?job=<id>`. */
  url: string;
}

const address = JSON.parse(process.argv[2] ?? '') as TargetAddress;
const stores = connect(address);
const deadLetters = new RedisDeadLetterStore({ redis: stores, prefix: 'bench' });

let worker: StormguardWorker | undefined;
let connection: ReturnType<typeof connect> | undefined;
let completed = 0;
let lastCompletedAt = 0;
let progress: NodeJS.Timeout | undefined;
let cpuAtGo: NodeJS.CpuUsage | undefined;
const storeCalls = { exchangeLimits: 0, limitState: 0, holdLimits: 0 };

/** The flow store, counting the calls the worker's limits make to it: each is one round trip. */
function countingStore(store: RedisFlowStore): LimitStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      if (name in storeCalls)
        return (...args: unknown[]) => {
          storeCalls[name as keyof typeof storeCalls]++;
          return value.apply(target, args);
        };
      return value.bind(target);
    },
  });
}

serve(async (message) => {
  switch (message.type) {
    case 'start': {
      const run = message.run as LimitsRun;
      completed = 0;
      lastCompletedAt = 0;
      for (const name of Object.keys(storeCalls)) storeCalls[name as keyof typeof storeCalls] = 0;
      connection = connect(address);
      const store = countingStore(new RedisFlowStore({ redis: stores, prefix: run.prefix }));
      worker = createWorker(
        run.queue,
        async (job, ctx) => {
          await ctx.call('api', async () => {
            const response = await fetch(`${run.url}?job=${job.id}`);
            await response.arrayBuffer();
            if (!response.ok) throw new Error(`api answered ${response.status}`);
          });
          return 'ok';
        },
        {
          connection,
          policy: presets.idempotentInternal,
          deadLetters,
          concurrency: run.concurrency,
          // One dependency per queue: a job takes its slot before it starts.
          dependencies: { call: 'api' },
          ...(run.maxInFlight === undefined
            ? {}
            : { limits: { api: { maxInFlight: run.maxInFlight } }, limitsOptions: { store } }),
          workerOptions: { autorun: false },
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
      reply({
        type: 'stopped',
        completed,
        lastCompletedAt,
        cpuMicros: cpu.user + cpu.system,
        storeCalls: { ...storeCalls },
      });
      return;
    }
    case 'exit': {
      stores.disconnect();
      process.exit(0);
    }
  }
});
reply({ type: 'up' });
