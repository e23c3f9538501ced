/**
 * createWorker against a bare BullMQ Worker: no-op jobs, concurrency 1, 10 and 50, on one redis-server this
 * script spawns on a free port. Prints jobs per second side by side and the ratio; Redis commands per job
 * (INFO commandstats, commands inside Lua scripts included), which shows that the success path adds no
 * round trip; and this process's CPU time per job, the overhead itself, which other load on the machine
 * disturbs far less than throughput.
 *
 *   npx tsx bench/worker/index.ts [--jobs 3000] [--rounds 3] [--json]
 */
import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { presets } from '../../src/policy/presets.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { TestRedis, waitFor } from '../../tests/helpers/redis-server.js';
import { benchArgs, formatTable, median } from '../common.js';

const { size: jobs, rounds, json } = benchArgs({ size: ['jobs', 3000] });
const CONCURRENCIES = [1, 10, 50];

type Kind = 'bare' | 'stormguard';
interface Measurement {
  jobsPerSecond: number;
  commandsPerJob: number;
  /** CPU time this process spent per job (user + system): the overhead, less sensitive to other load. */
  cpuMicrosPerJob: number;
}

const server = await TestRedis.start();
const redis = new Redis(server.url, { maxRetriesPerRequest: null });
const connection = server.connection;
let run = 0;

/** Total commands Redis has executed so far. */
async function commandCount(): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/calls=(\d+)/g)) total += Number(match[1]);
  return total;
}

async function measure(kind: Kind, concurrency: number): Promise<Measurement> {
  const name = `bench-${kind}-${concurrency}-${run++}`;
  const queue = new Queue(name, { connection });
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({ name: 'noop', data: { i }, opts: { removeOnComplete: true } })),
  );
  const noop = async () => 'ok';
  const budget =
    kind === 'stormguard'
      ? new RetryBudget({ store: new RedisBudgetStore({ redis, prefix: `bench${run}` }) })
      : undefined;
  const worker: Worker = budget
    ? createWorker(name, async (_job: Job, _ctx) => noop(), {
        connection,
        policy: presets.idempotentInternal,
        // The success path never reads or writes it: which store it is does not change the figures.
        deadLetters: new MemoryDeadLetterStore(),
        budget,
        concurrency,
        workerOptions: { autorun: false },
      })
    : new Worker(name, noop, { connection, concurrency, autorun: false });
  let completed = 0;
  worker.on('completed', () => {
    completed++;
  });
  await worker.waitUntilReady();
  const commandsBefore = await commandCount();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  void worker.run();
  await waitFor(() => completed >= jobs, 600_000, `${jobs} ${kind} jobs`, 5);
  const seconds = (performance.now() - started) / 1_000;
  const cpu = process.cpuUsage(cpuBefore);
  const commands = (await commandCount()) - commandsBefore;
  await worker.close();
  await budget?.close();
  await queue.obliterate({ force: true });
  await queue.close();
  return {
    jobsPerSecond: jobs / seconds,
    commandsPerJob: commands / jobs,
    cpuMicrosPerJob: (cpu.user + cpu.system) / jobs,
  };
}

const rows: {
  concurrency: number;
  bareJobsPerSecond: number;
  stormguardJobsPerSecond: number;
  ratio: number;
  bareCommandsPerJob: number;
  stormguardCommandsPerJob: number;
  bareCpuMicrosPerJob: number;
  stormguardCpuMicrosPerJob: number;
}[] = [];
try {
  // Warm-up, discarded: the first runs pay for JIT compilation of BullMQ's and stormguard's code paths.
  for (const kind of ['bare', 'stormguard'] as const) await measure(kind, 10);
  for (const concurrency of CONCURRENCIES) {
    const results: Record<Kind, Measurement[]> = { bare: [], stormguard: [] };
    // Interleaved in alternating order, so drift (other load, Redis memory, warm-up) hits both sides alike.
    for (let round = 0; round < rounds; round++) {
      const order: Kind[] = round % 2 === 0 ? ['bare', 'stormguard'] : ['stormguard', 'bare'];
      for (const kind of order) results[kind].push(await measure(kind, concurrency));
    }
    const bare = median(results.bare.map((r) => r.jobsPerSecond));
    const guarded = median(results.stormguard.map((r) => r.jobsPerSecond));
    rows.push({
      concurrency,
      bareJobsPerSecond: Math.round(bare),
      stormguardJobsPerSecond: Math.round(guarded),
      // Each round's pair ran back to back under the same conditions: the median of their ratios is steadier
      // on a busy machine than the ratio of the two medians.
      ratio: Number(
        median(
          results.stormguard.map((r, i) => r.jobsPerSecond / (results.bare[i] as Measurement).jobsPerSecond),
        ).toFixed(2),
      ),
      bareCommandsPerJob: Number(median(results.bare.map((r) => r.commandsPerJob)).toFixed(2)),
      stormguardCommandsPerJob: Number(median(results.stormguard.map((r) => r.commandsPerJob)).toFixed(2)),
      bareCpuMicrosPerJob: Math.round(median(results.bare.map((r) => r.cpuMicrosPerJob))),
      stormguardCpuMicrosPerJob: Math.round(median(results.stormguard.map((r) => r.cpuMicrosPerJob))),
    });
  }
} finally {
  redis.disconnect();
  await server.close();
}

if (json) {
  process.stdout.write(`${JSON.stringify({ jobs, rounds, rows }, null, 2)}\n`);
} else {
  process.stdout.write(
    `no-op jobs: ${jobs} per run, median of ${rounds} interleaved rounds (ratio: median of the rounds' ratios)\n\n`,
  );
  const header = [
    'concurrency',
    'bare BullMQ jobs/s',
    'createWorker jobs/s',
    'ratio',
    'bare cmds/job',
    'createWorker cmds/job',
    'bare CPU µs/job',
    'createWorker CPU µs/job',
  ];
  const table = rows.map((r) => [
    String(r.concurrency),
    String(r.bareJobsPerSecond),
    String(r.stormguardJobsPerSecond),
    `${r.ratio.toFixed(2)}×`,
    r.bareCommandsPerJob.toFixed(2),
    r.stormguardCommandsPerJob.toFixed(2),
    String(r.bareCpuMicrosPerJob),
    String(r.stormguardCpuMicrosPerJob),
  ]);
  process.stdout.write(`${formatTable([header, ...table], 0)}\n`);
}
