/**
 * createWorker against a bare BullMQ Worker in the same run: no-op jobs, concurrency 1, 10 and 50, on
 * Redis and on BullMQ 6's PostgreSQL backend, each a server this script starts on a free port. Prints,
 * side by side: jobs per second and their ratio (goal: createWorker ≥ 0.9× bare BullMQ); database commands
 * per job as the server counts them (Redis INFO commandstats, commands inside Lua scripts included;
 * PostgreSQL pg_stat_statements, every top-level statement), which shows that the success path adds no
 * round trip (goal: equal); and this process's CPU time per job, the overhead itself, which other load on
 * the machine disturbs far less than throughput.
 *
 *   npx tsx bench/worker/index.ts [--jobs 5000] [--rounds 3] [--backend redis|postgres|both] [--json]
 */
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { presets } from '../../src/policy/presets.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { waitFor } from '../../tests/helpers/redis-server.js';
import { formatTable, median } from '../common.js';
import { type BackendName, type BenchBackend, postgresBackend, redisBackend } from './backends.js';

const CONCURRENCIES = [1, 10, 50];

const { jobs, rounds, json, backends } = args();

type Kind = 'bare' | 'stormguard';
interface Measurement {
  jobsPerSecond: number;
  commandsPerJob: number;
  /** CPU time this process spent per job (user + system): the overhead, less sensitive to other load. */
  cpuMicrosPerJob: number;
}

interface Row {
  backend: BackendName;
  concurrency: number;
  bareJobsPerSecond: number;
  stormguardJobsPerSecond: number;
  ratio: number;
  bareCommandsPerJob: number;
  stormguardCommandsPerJob: number;
  bareCpuMicrosPerJob: number;
  stormguardCpuMicrosPerJob: number;
}

let run = 0;

/** BullMQ's constructors take the backend factory last; the Redis backend is BullMQ's default. */
function backendArgument(backend: BenchBackend): [] {
  return (backend.factory === undefined ? [] : [backend.factory]) as [];
}

async function measure(backend: BenchBackend, kind: Kind, concurrency: number): Promise<Measurement> {
  const name = `bench-${kind}-${concurrency}-${run++}`;
  const connection = backend.connection as never;
  const queue = new Queue(name, { connection }, ...backendArgument(backend));
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({ name: 'noop', data: { i }, opts: { removeOnComplete: true } })),
  );
  const noop = async () => 'ok';
  const budget =
    kind === 'stormguard' ? new RetryBudget({ store: backend.budgetStore(`bench${run}`) }) : undefined;
  const worker: Worker = budget
    ? createWorker(name, async () => noop(), {
        connection,
        ...(backend.factory ? { backend: backend.factory } : {}),
        policy: presets.idempotentInternal,
        // The success path never reads or writes it: which store it is does not change the figures.
        deadLetters: new MemoryDeadLetterStore(),
        budget,
        concurrency,
        workerOptions: { autorun: false },
      })
    : new Worker(name, noop, { connection, concurrency, autorun: false }, ...backendArgument(backend));
  let completed = 0;
  worker.on('completed', () => {
    completed++;
  });
  await worker.waitUntilReady();
  const commandsBefore = await backend.commandCount();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  void worker.run();
  await waitFor(() => completed >= jobs, 600_000, `${jobs} ${kind} jobs`, 5);
  const seconds = (performance.now() - started) / 1_000;
  const cpu = process.cpuUsage(cpuBefore);
  // Successes batched in the budget reach the store at least every 250 ms: counted, as in production.
  await budget?.flush();
  const commands = (await backend.commandCount()) - commandsBefore;
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

async function benchmark(backend: BenchBackend): Promise<Row[]> {
  const rows: Row[] = [];
  // Warm-up, discarded: the first runs pay for JIT compilation of BullMQ's and stormguard's code paths.
  for (const kind of ['bare', 'stormguard'] as const) await measure(backend, kind, 10);
  for (const concurrency of CONCURRENCIES) {
    const results: Record<Kind, Measurement[]> = { bare: [], stormguard: [] };
    // Interleaved in alternating order, so drift (other load, memory, warm-up) hits both sides alike.
    for (let round = 0; round < rounds; round++) {
      const order: Kind[] = round % 2 === 0 ? ['bare', 'stormguard'] : ['stormguard', 'bare'];
      for (const kind of order) results[kind].push(await measure(backend, kind, concurrency));
    }
    const figure = (kind: Kind, key: keyof Measurement) => median(results[kind].map((r) => r[key]));
    rows.push({
      backend: backend.name,
      concurrency,
      bareJobsPerSecond: Math.round(figure('bare', 'jobsPerSecond')),
      stormguardJobsPerSecond: Math.round(figure('stormguard', 'jobsPerSecond')),
      // Each round's pair ran back to back under the same conditions: the median of their ratios is steadier
      // on a busy machine than the ratio of the two medians.
      ratio: Number(
        median(
          results.stormguard.map((r, i) => r.jobsPerSecond / (results.bare[i] as Measurement).jobsPerSecond),
        ).toFixed(2),
      ),
      bareCommandsPerJob: Number(figure('bare', 'commandsPerJob').toFixed(2)),
      stormguardCommandsPerJob: Number(figure('stormguard', 'commandsPerJob').toFixed(2)),
      bareCpuMicrosPerJob: Math.round(figure('bare', 'cpuMicrosPerJob')),
      stormguardCpuMicrosPerJob: Math.round(figure('stormguard', 'cpuMicrosPerJob')),
    });
  }
  return rows;
}

const rows: Row[] = [];
const servers: string[] = [];
for (const name of backends) {
  const backend = name === 'redis' ? await redisBackend() : await postgresBackend();
  servers.push(backend.server);
  try {
    rows.push(...(await benchmark(backend)));
  } finally {
    await backend.close();
  }
}

if (json) {
  process.stdout.write(`${JSON.stringify({ jobs, rounds, servers, rows }, null, 2)}\n`);
} else {
  process.stdout.write(
    `no-op jobs: ${jobs} per run, median of ${rounds} interleaved rounds (ratio: median of the rounds' ratios); ${servers.join('; ')}\n\n`,
  );
  const header = [
    'backend',
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
    r.backend,
    String(r.concurrency),
    String(r.bareJobsPerSecond),
    String(r.stormguardJobsPerSecond),
    `${r.ratio.toFixed(2)}×`,
    r.bareCommandsPerJob.toFixed(2),
    r.stormguardCommandsPerJob.toFixed(2),
    String(r.bareCpuMicrosPerJob),
    String(r.stormguardCpuMicrosPerJob),
  ]);
  process.stdout.write(`${formatTable([header, ...table], 1)}\n`);
}

/** `--jobs N --rounds N --backend redis|postgres|both --json`; a bad value names the option, exit 2. */
function args(): { jobs: number; rounds: number; json: boolean; backends: BackendName[] } {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: '5000' },
      rounds: { type: 'string', default: '3' },
      backend: { type: 'string', default: 'both' },
      json: { type: 'boolean', default: false },
    },
  });
  const jobs = Number(values.jobs);
  const rounds = Number(values.rounds);
  const chosen: Record<string, BackendName[]> = {
    both: ['redis', 'postgres'],
    redis: ['redis'],
    postgres: ['postgres'],
  };
  const picked = chosen[values.backend];
  if (!Number.isInteger(jobs) || jobs < 1 || !Number.isInteger(rounds) || rounds < 1 || !picked) {
    process.stderr.write(
      '--jobs and --rounds must be whole numbers >= 1, --backend redis, postgres or both\n',
    );
    process.exit(2);
  }
  return { jobs, rounds, json: values.json === true, backends: picked };
}
