/**
 * Fleet throughput: 1, 2, 4 and 8 worker processes (each its own Node process with one BullMQ worker) on
 * one redis-server and on a three-master Redis Cluster, no-op jobs and 1 ms jobs. In each cell a fleet of
 * stormguard's createWorker and a bare BullMQ fleet of the same size run the same jobs in the same
 * processes, interleaved round by round in alternating order. Prints per cell: jobs/s of each and their
 * ratio (goal: stormguard ≥ 0.9× bare), Redis CPU µs per job (INFO cpu, used_cpu_sys + used_cpu_user, summed
 * over the masters) and commands per job (INFO commandstats, inside Lua scripts included) of each, and
 * stormguard's extra commands per job, and the worker processes' own CPU µs per job (the overhead, which
 * other load on the machine disturbs far less than throughput). On the cluster BullMQ's prefix is `{app}`: one queue, one slot.
 *
 *   npx tsx bench/fleet/index.ts [--jobs 10000] [--rounds 3] [--processes 1,2,4,8] [--concurrency 10]
 *     [--target redis|cluster|both] [--quick] [--json]
 *
 * `--quick`: 1 000 jobs, one round (about a minute).
 */
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { IpcProcess, nowMs } from '../../tests/helpers/ipc-process.js';
import { formatTable, median } from '../common.js';
import {
  commandTotal,
  connect,
  difference,
  type RedisTarget,
  startTarget,
  type TargetName,
} from '../redis-target.js';
import type { FleetRun } from './worker-process.js';

type Side = FleetRun['side'];
const SIDES: Side[] = ['bare', 'stormguard'];
const JOB_MS = [0, 1];
const PREFIX = '{app}';

interface Measurement {
  jobsPerSecond: number;
  redisCpuMicrosPerJob: number;
  commandsPerJob: number;
  /** CPU time the worker processes spent per job (user + system): the overhead, steadier under load. */
  workerCpuMicrosPerJob: number;
  commands: Record<string, number>;
}

interface Row {
  target: TargetName;
  processes: number;
  jobMs: number;
  bareJobsPerSecond: number;
  stormguardJobsPerSecond: number;
  ratio: number;
  bareRedisCpuMicrosPerJob: number;
  stormguardRedisCpuMicrosPerJob: number;
  bareCommandsPerJob: number;
  stormguardCommandsPerJob: number;
  extraCommandsPerJob: number;
  bareWorkerCpuMicrosPerJob: number;
  stormguardWorkerCpuMicrosPerJob: number;
  /** stormguard's extra commands by name, per job (median round). */
  extraByCommand: Record<string, number>;
}

const options = args();
let runCount = 0;

async function measure(
  target: RedisTarget,
  fleet: IpcProcess[],
  side: Side,
  jobMs: number,
  jobs: number,
): Promise<Measurement> {
  const queueName = `fleet-${side}-${runCount++}`;
  const producer = connect(target.address);
  const queue = new Queue(queueName, { connection: producer, prefix: PREFIX });
  for (let i = 0; i < jobs; i += 1_000)
    await queue.addBulk(
      Array.from({ length: Math.min(1_000, jobs - i) }, (_, j) => ({
        name: 'job',
        data: { i: i + j },
        opts: { removeOnComplete: true },
      })),
    );
  const run: FleetRun = { queue: queueName, prefix: PREFIX, side, jobMs, concurrency: options.concurrency };
  await Promise.all(fleet.map((p) => p.request({ type: 'start', run }, 'ready')));
  const done = new Array<number>(fleet.length).fill(0);
  let finished: () => void = () => {};
  const allDone = new Promise<void>((resolve) => {
    finished = resolve;
  });
  fleet.forEach((p, i) => {
    p.on('progress', (message) => {
      done[i] = message.completed as number;
      if (done.reduce((a, b) => a + b, 0) >= jobs) finished();
    });
  });
  const before = await target.counters();
  const startedAt = nowMs();
  for (const p of fleet) p.send({ type: 'go' });
  await Promise.race([
    allDone,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`${jobs} ${side} jobs did not end in 10 minutes`)), 600_000).unref(),
    ),
  ]);
  const stopped = await Promise.all(fleet.map((p) => p.request({ type: 'stop' }, 'stopped')));
  const used = difference(before, await target.counters());
  const endedAt = Math.max(...stopped.map((s) => s.lastCompletedAt as number));
  await queue.obliterate({ force: true });
  await queue.close();
  producer.disconnect();
  return {
    jobsPerSecond: jobs / ((endedAt - startedAt) / 1_000),
    redisCpuMicrosPerJob: (used.cpuSeconds * 1e6) / jobs,
    commandsPerJob: commandTotal(used) / jobs,
    workerCpuMicrosPerJob: stopped.reduce((sum, s) => sum + (s.cpuMicros as number), 0) / jobs,
    commands: used.commands,
  };
}

async function cell(target: RedisTarget, fleet: IpcProcess[], jobMs: number): Promise<Row> {
  const results: Record<Side, Measurement[]> = { bare: [], stormguard: [] };
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? SIDES : [...SIDES].reverse();
    for (const side of order) results[side].push(await measure(target, fleet, side, jobMs, options.jobs));
  }
  const figure = (side: Side, key: Exclude<keyof Measurement, 'commands'>) =>
    median(results[side].map((r) => r[key]));
  const extra: Record<string, number> = {};
  const names = new Set(results.stormguard.flatMap((r) => Object.keys(r.commands)));
  for (const name of names) {
    const perJob = (r: Measurement) => (r.commands[name] ?? 0) / options.jobs;
    const delta = median(results.stormguard.map(perJob)) - median(results.bare.map(perJob));
    if (Math.abs(delta) >= 0.005) extra[name] = Number(delta.toFixed(3));
  }
  const sgCommands = figure('stormguard', 'commandsPerJob');
  const bareCommands = figure('bare', 'commandsPerJob');
  return {
    target: target.address.name,
    processes: fleet.length,
    jobMs,
    bareJobsPerSecond: Math.round(figure('bare', 'jobsPerSecond')),
    stormguardJobsPerSecond: Math.round(figure('stormguard', 'jobsPerSecond')),
    // Each round's pair ran back to back: the median of their ratios is steadier than the ratio of medians.
    ratio: Number(
      median(
        results.stormguard.map((r, i) => r.jobsPerSecond / (results.bare[i] as Measurement).jobsPerSecond),
      ).toFixed(2),
    ),
    bareRedisCpuMicrosPerJob: Math.round(figure('bare', 'redisCpuMicrosPerJob')),
    stormguardRedisCpuMicrosPerJob: Math.round(figure('stormguard', 'redisCpuMicrosPerJob')),
    bareCommandsPerJob: Number(bareCommands.toFixed(2)),
    stormguardCommandsPerJob: Number(sgCommands.toFixed(2)),
    extraCommandsPerJob: Number((sgCommands - bareCommands).toFixed(3)),
    bareWorkerCpuMicrosPerJob: Math.round(figure('bare', 'workerCpuMicrosPerJob')),
    stormguardWorkerCpuMicrosPerJob: Math.round(figure('stormguard', 'workerCpuMicrosPerJob')),
    extraByCommand: extra,
  };
}

const rows: Row[] = [];
const servers: string[] = [];
for (const name of options.targets) {
  process.stderr.write(
    `${name}: starting the server(s) and ${Math.max(...options.processes)} worker processes\n`,
  );
  const target = await startTarget(name);
  servers.push(target.server);
  const all = Array.from(
    { length: Math.max(...options.processes) },
    () => new IpcProcess(new URL('./worker-process.ts', import.meta.url), [JSON.stringify(target.address)]),
  );
  try {
    await Promise.all(all.map((p) => p.next('up')));
    // Warm-up, discarded: the first runs pay for JIT compilation in every process.
    for (const side of SIDES) await measure(target, all, side, 0, Math.min(options.jobs, 1_000));
    for (const jobMs of JOB_MS) {
      for (const processes of options.processes) {
        process.stderr.write(`${name}: ${processes} processes, ${jobMs} ms jobs\n`);
        rows.push(await cell(target, all.slice(0, processes), jobMs));
      }
    }
  } finally {
    await Promise.all(all.map((p) => p.close()));
    await target.close();
  }
}

if (options.json) {
  const { jobs, rounds, concurrency } = options;
  process.stdout.write(`${JSON.stringify({ jobs, rounds, concurrency, servers, rows }, null, 2)}\n`);
} else {
  process.stdout.write(
    `${options.jobs} jobs per run, concurrency ${options.concurrency} per process, median of ${options.rounds} interleaved round(s) (ratio: median of the rounds' ratios); ${servers.join('; ')}\n\n`,
  );
  const header = [
    'target',
    'procs',
    'job',
    'bare jobs/s',
    'stormguard jobs/s',
    'ratio',
    'bare Redis µs/job',
    'stormguard Redis µs/job',
    'bare cmds/job',
    'stormguard cmds/job',
    'extra cmds/job',
    'bare worker CPU µs/job',
    'stormguard worker CPU µs/job',
  ];
  const table = rows.map((r) => [
    r.target,
    String(r.processes),
    r.jobMs === 0 ? 'no-op' : `${r.jobMs} ms`,
    String(r.bareJobsPerSecond),
    String(r.stormguardJobsPerSecond),
    `${r.ratio.toFixed(2)}×`,
    String(r.bareRedisCpuMicrosPerJob),
    String(r.stormguardRedisCpuMicrosPerJob),
    r.bareCommandsPerJob.toFixed(2),
    r.stormguardCommandsPerJob.toFixed(2),
    r.extraCommandsPerJob.toFixed(3),
    String(r.bareWorkerCpuMicrosPerJob),
    String(r.stormguardWorkerCpuMicrosPerJob),
  ]);
  process.stdout.write(`${formatTable([header, ...table], 3)}\n`);
}

/** The command line; a bad value names the option, exit 2. */
function args() {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string' },
      rounds: { type: 'string' },
      processes: { type: 'string', default: '1,2,4,8' },
      concurrency: { type: 'string', default: '10' },
      target: { type: 'string', default: 'both' },
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const jobs = Number(values.jobs ?? (values.quick ? 1_000 : 10_000));
  const rounds = Number(values.rounds ?? (values.quick ? 1 : 3));
  const concurrency = Number(values.concurrency);
  const processes = values.processes.split(',').map(Number);
  const targets = ({ both: ['redis', 'cluster'], redis: ['redis'], cluster: ['cluster'] } as const)[
    values.target as 'both'
  ];
  const whole = (n: number, min: number) => Number.isInteger(n) && n >= min;
  if (
    !whole(jobs, 1) ||
    !whole(rounds, 1) ||
    !whole(concurrency, 1) ||
    !processes.every((n) => whole(n, 1) && n <= 64) ||
    !targets
  ) {
    process.stderr.write(
      '--jobs, --rounds and --concurrency must be whole numbers >= 1, --processes a comma-separated list of 1 to 64, --target redis, cluster or both\n',
    );
    process.exit(2);
  }
  return { jobs, rounds, concurrency, processes, targets, json: values.json === true };
}
