/**
 * What a fleet of worker processes costs per job in CPU, worker and server together: 1, 2, 4 and 8 worker
 * processes (each its own Node process with one BullMQ worker, concurrency 10) on one redis-server, on a
 * three-master Redis Cluster and on PostgreSQL (BullMQ 6's PostgreSQL backend and stormguard's PostgreSQL
 * stores, no Redis; or, with `--cells redis-pg`, BullMQ on Redis and stormguard's stores on PostgreSQL), with
 * no limits configured. In each cell a fleet of stormguard's createWorker and a bare
 * BullMQ fleet of the same size run the same number of jobs in the same processes, round by round in
 * alternating order, after a discarded warm-up. Two paths:
 * - `success`: every job succeeds (a no-op inside `ctx.call`, whose success the budget counts, batched);
 * - `retry`: every job's first attempt fails (a transient error) and its second succeeds, bare BullMQ
 *   retrying through `attempts: 2` and a fixed 10 ms backoff, stormguard through its policy (the same
 *   delay) and a budget that grants every retry.
 *
 * Per cell, path and fleet size it prints, for each side, CPU µs per job: the worker processes' own CPU
 * (user + system, from `go` to the worker closed) plus the servers' (Redis `INFO cpu` summed over the
 * masters; PostgreSQL `/proc` of the postmaster and its children), as median and spread (min–max over the
 * rounds, p10–p90 from 10 rounds); stormguard's ratio to bare (the median of each round's ratio: the two ran
 * back to back; goal ≤ 1.1× on the success path); commands per job (Redis `INFO commandstats`, inside Lua
 * scripts included; PostgreSQL top-level statements) and stormguard's extra (on the retry path per retried
 * job, goal ≤ +3); jobs/s of each; the 1-minute load average when the cell ended. On one Redis the retry
 * path's extra is then broken down by component and command from one more pair of runs under MONITOR
 * (bench/retry-path's monitor), with the fleet's smallest size.
 *
 *   npx tsx bench/fleet/index.ts [--cells redis,cluster,postgres] [--procs 1,2,4,8] [--paths success,retry]
 *     [--jobs 2000] [--rounds 3] [--concurrency 10] [--job-ms 0] [--cpu-prof <folder>] [--quick] [--json]
 *
 * `--quick`: 1 000 jobs, two rounds. Progress goes to stderr. `--cpu-prof <folder>`: every worker process
 * profiles each measured run (V8's CPU profiler, from `go` to the worker closed; not the warm-up or the
 * MONITOR runs) into `<folder>/<side>-<path>-<queue>-<pid>-<jobs>jobs.cpuprofile`; the profiler's own cost
 * is then in the CPU figures. `npx tsx bench/fleet/profile-summary.ts <folder>` says what each side's
 * CPU per job went to.
 */
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { IpcProcess, nowMs } from '../../tests/helpers/ipc-process.js';
import { formatTable, median } from '../common.js';
import { commandTotal, difference } from '../redis-target.js';
import { type Breakdown, CommandMonitor, type ScriptRegistry } from '../retry-path/monitor.js';
import { type FleetRun, jobOptions, type Path, queueConnection } from './run.js';
import { type CellName, type CellServers, startCell } from './servers.js';

type Side = FleetRun['side'];
const SIDES: Side[] = ['bare', 'stormguard'];
const PREFIX = '{app}';
const GOAL_CPU_RATIO = 1.1;
const GOAL_EXTRA_COMMANDS = 3;

interface Measurement {
  jobsPerSecond: number;
  workerCpuMicrosPerJob: number;
  serverCpuMicrosPerJob: number;
  cpuMicrosPerJob: number;
  commandsPerJob: number;
  commands: Record<string, number>;
  /** Jobs that ended failed, not on purpose (counted as ended). */
  lostJobs: number;
  breakdown?: Breakdown;
}

/** A figure over the rounds: the median and the spread (min–max, or p10–p90 from 10 rounds). */
interface Spread {
  median: number;
  low: number;
  high: number;
}

interface SideFigures {
  /** Worker + server CPU µs per job. */
  cpuMicrosPerJob: Spread;
  workerCpuMicrosPerJob: Spread;
  serverCpuMicrosPerJob: Spread;
  commandsPerJob: number;
  jobsPerSecond: number;
  /** Jobs that ended failed, not on purpose, over all rounds. */
  lostJobs: number;
}

interface Row {
  cell: CellName;
  processes: number;
  path: Path;
  bare: SideFigures;
  stormguard: SideFigures;
  /** stormguard's worker + server CPU over bare's, each round's pair. */
  cpuRatio: Spread;
  /** stormguard's commands per job over bare's, each round's pair (per retried job on the retry path). */
  extraCommandsPerJob: Spread;
  goal: string;
  met: boolean;
  /** stormguard's extra commands by name, per job (medians; differences of at least 0.005). */
  extraByCommand: Record<string, number>;
  loadAverage: number;
}

const options = args();
let runCount = 0;

/** One run of `jobs` jobs through the fleet, on one side. With `monitor`, the commands by component too. */
async function measure(
  cell: CellServers,
  fleet: IpcProcess[],
  side: Side,
  path: Path,
  jobs: number,
  how: { monitor?: { monitor: CommandMonitor; admin: Redis }; warmUp?: boolean } = {},
): Promise<Measurement> {
  const { monitor } = how;
  const queueName = `fleet-${side}-${runCount++}`;
  const producer = await queueConnection(cell.address.queue);
  const queue = new Queue(
    queueName,
    {
      connection: producer.connection as never,
      ...(producer.backend === undefined ? { prefix: PREFIX } : {}),
    },
    ...((producer.backend === undefined ? [] : [producer.backend]) as []),
  );
  for (let i = 0; i < jobs; i += 1_000)
    await queue.addBulk(
      Array.from({ length: Math.min(1_000, jobs - i) }, (_, j) => ({
        name: 'job',
        data: { i: i + j },
        opts: jobOptions(side, path),
      })),
    );
  const run: FleetRun = {
    queue: queueName,
    prefix: PREFIX,
    side,
    path,
    jobMs: options.jobMs,
    concurrency: options.concurrency,
    profile: monitor === undefined && how.warmUp !== true,
  };
  await Promise.all(fleet.map((p) => p.request({ type: 'start', run }, 'ready')));
  const done = new Array<number>(fleet.length).fill(0);
  let finished: () => void = () => {};
  const allDone = new Promise<void>((resolve) => {
    finished = resolve;
  });
  let shown = nowMs();
  fleet.forEach((p, i) => {
    p.on('progress', (message) => {
      done[i] = message.completed as number;
      const total = done.reduce((a, b) => a + b, 0);
      if (total >= jobs) finished();
      if (nowMs() - shown >= 10_000) {
        shown = nowMs();
        process.stderr.write(`    ${side}: ${total} of ${jobs} jobs\n`);
      }
    });
  });
  if (monitor) {
    await monitor.monitor.settle(monitor.admin);
    monitor.monitor.record();
  }
  const before = await cell.counters();
  const startedAt = nowMs();
  for (const p of fleet) p.send({ type: 'go' });
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    allDone,
    new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${jobs} ${side} jobs did not end in 5 minutes`)),
        300_000,
      ).unref();
    }),
  ]);
  clearTimeout(timer);
  const stopped = await Promise.all(
    fleet.map((p) => p.request({ type: 'stop', scripts: monitor !== undefined }, 'stopped')),
  );
  const used = difference(before, await cell.counters());
  let breakdown: Breakdown | undefined;
  if (monitor) {
    await monitor.monitor.settle(monitor.admin);
    const registries = stopped.flatMap((s) => s.scripts as ScriptRegistry[]);
    breakdown = monitor.monitor.stop(producer.client instanceof Redis ? [producer.client] : [], registries);
  }
  const failed = stopped.reduce((sum, s) => sum + (s.failedOnPurpose as number), 0);
  if (path === 'retry' && failed < jobs) throw new Error(`${side}: ${failed} of ${jobs} jobs failed once`);
  const endedAt = Math.max(...stopped.map((s) => s.lastCompletedAt as number));
  await queue.obliterate({ force: true });
  await queue.close();
  producer.close();
  const workerCpu = stopped.reduce((sum, s) => sum + (s.cpuMicros as number), 0) / jobs;
  const serverCpu = (used.cpuSeconds * 1e6) / jobs;
  return {
    jobsPerSecond: jobs / ((endedAt - startedAt) / 1_000),
    workerCpuMicrosPerJob: workerCpu,
    serverCpuMicrosPerJob: serverCpu,
    cpuMicrosPerJob: workerCpu + serverCpu,
    commandsPerJob: commandTotal(used) / jobs,
    commands: used.commands,
    lostJobs: stopped.reduce((sum, s) => sum + (s.lost as number), 0),
    ...(breakdown ? { breakdown } : {}),
  };
}

function spread(xs: number[]): Spread {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  const wide = sorted.length >= 10;
  return {
    median: round3(median(sorted)),
    low: round3(wide ? at(0.1) : (sorted[0] as number)),
    high: round3(wide ? at(0.9) : (sorted.at(-1) as number)),
  };
}

function sideFigures(runs: Measurement[]): SideFigures {
  return {
    cpuMicrosPerJob: spread(runs.map((r) => r.cpuMicrosPerJob)),
    workerCpuMicrosPerJob: spread(runs.map((r) => r.workerCpuMicrosPerJob)),
    serverCpuMicrosPerJob: spread(runs.map((r) => r.serverCpuMicrosPerJob)),
    commandsPerJob: round3(median(runs.map((r) => r.commandsPerJob))),
    jobsPerSecond: Math.round(median(runs.map((r) => r.jobsPerSecond))),
    lostJobs: runs.reduce((sum, r) => sum + r.lostJobs, 0),
  };
}

async function row(cell: CellServers, fleet: IpcProcess[], path: Path): Promise<Row> {
  const results: Record<Side, Measurement[]> = { bare: [], stormguard: [] };
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? SIDES : [...SIDES].reverse();
    for (const side of order) results[side].push(await measure(cell, fleet, side, path, options.jobs));
  }
  const paired = (f: (sg: Measurement, bare: Measurement) => number) =>
    spread(results.stormguard.map((sg, i) => f(sg, results.bare[i] as Measurement)));
  const cpuRatio = paired((sg, bare) => sg.cpuMicrosPerJob / bare.cpuMicrosPerJob);
  const extraCommandsPerJob = paired((sg, bare) => sg.commandsPerJob - bare.commandsPerJob);
  const extra: Record<string, number> = {};
  for (const name of new Set(results.stormguard.flatMap((r) => Object.keys(r.commands)))) {
    const perJob = (r: Measurement) => (r.commands[name] ?? 0) / options.jobs;
    const delta = median(results.stormguard.map(perJob)) - median(results.bare.map(perJob));
    if (Math.abs(delta) >= 0.005) extra[name] = round3(delta);
  }
  const met =
    path === 'success'
      ? cpuRatio.median <= GOAL_CPU_RATIO
      : extraCommandsPerJob.median <= GOAL_EXTRA_COMMANDS;
  return {
    cell: cell.address.name,
    processes: fleet.length,
    path,
    bare: sideFigures(results.bare),
    stormguard: sideFigures(results.stormguard),
    cpuRatio,
    extraCommandsPerJob,
    goal: path === 'success' ? `CPU <= ${GOAL_CPU_RATIO}x` : `<= +${GOAL_EXTRA_COMMANDS} cmds`,
    met,
    extraByCommand: extra,
    loadAverage: round2(loadavg()[0] ?? 0),
  };
}

/** One more pair of runs under MONITOR: stormguard's extra commands per retried job, by component. */
async function retryBreakdown(cell: CellServers, fleet: IpcProcess[]) {
  const [node] = cell.address.queue.kind === 'redis' ? cell.address.queue.target.nodes : [];
  if (!node) throw new Error('the breakdown needs one redis-server');
  const admin = new Redis(node);
  const monitor = new CommandMonitor();
  await monitor.start(admin);
  const jobs = Math.min(options.jobs, 1_000);
  try {
    const bare = await measure(cell, fleet, 'bare', 'retry', jobs, { monitor: { monitor, admin } });
    const ours = await measure(cell, fleet, 'stormguard', 'retry', jobs, { monitor: { monitor, admin } });
    const rows: { component: string; command: string; bare: number; stormguard: number }[] = [];
    const keys = new Set<string>();
    for (const b of [bare.breakdown, ours.breakdown])
      for (const [component, counts] of Object.entries(b ?? {}))
        for (const command of Object.keys(counts)) keys.add(`${component}\u0000${command}`);
    for (const key of [...keys].sort()) {
      const [component = '', command = ''] = key.split('\u0000');
      const pick = (m: Measurement) => (m.breakdown?.[component]?.[command] ?? 0) / jobs;
      if (Math.abs(pick(ours) - pick(bare)) >= 0.005)
        rows.push({ component, command, bare: round3(pick(bare)), stormguard: round3(pick(ours)) });
    }
    return { processes: fleet.length, jobs, rows };
  } finally {
    await monitor.close();
    admin.disconnect();
  }
}

const startLoad = loadavg().map(round2);
const rows: Row[] = [];
const servers: string[] = [];
let breakdown: Awaited<ReturnType<typeof retryBreakdown>> | undefined;
const failures: string[] = [];
for (const name of options.cells) {
  const size = Math.max(...options.procs);
  process.stderr.write(`${name}: starting the server(s) and ${size} worker processes\n`);
  const cell = await startCell(name).catch((error: unknown) => {
    failures.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  });
  if (!cell) continue;
  servers.push(cell.server);
  const all = Array.from(
    { length: size },
    () =>
      new IpcProcess(new URL('./worker-process.ts', import.meta.url), [
        JSON.stringify(cell.address),
        ...(options.cpuProf ? [options.cpuProf] : []),
      ]),
  );
  try {
    await Promise.all(all.map((p) => p.next('up')));
    for (const path of options.paths) {
      // Warm-up, discarded: the first runs pay for JIT compilation and script loading in every process.
      process.stderr.write(`${name}: ${path} path, warm-up\n`);
      for (const side of SIDES)
        await measure(cell, all, side, path, Math.min(options.jobs, 500), { warmUp: true });
      for (const processes of options.procs) {
        process.stderr.write(`${name}: ${path} path, ${processes} processes, ${options.rounds} rounds\n`);
        const r = await row(cell, all.slice(0, processes), path);
        rows.push(r);
        process.stderr.write(
          `  CPU µs/job bare ${Math.round(r.bare.cpuMicrosPerJob.median)}, stormguard ${Math.round(r.stormguard.cpuMicrosPerJob.median)} (${r.cpuRatio.median.toFixed(2)}×), extra cmds/job ${r.extraCommandsPerJob.median.toFixed(2)}, load ${r.loadAverage}\n`,
        );
      }
      if (path === 'retry' && name === 'redis') {
        process.stderr.write(`${name}: retry path under MONITOR, by component\n`);
        breakdown = await retryBreakdown(cell, all.slice(0, Math.min(...options.procs)));
      }
    }
  } catch (error) {
    // A cell that fails ends there; the other cells still run, and what was measured is printed.
    failures.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    await Promise.all(all.map((p) => p.close()));
    await cell.close();
  }
}
for (const failure of failures) process.stderr.write(`failed: ${failure}\n`);
if (failures.length > 0) process.exitCode = 1;
const endLoad = loadavg().map(round2);

const { jobs, rounds, concurrency, jobMs } = options;
if (options.json) {
  process.stdout.write(
    `${JSON.stringify({ jobs, rounds, concurrency, jobMs, loadAverage: { start: startLoad, end: endLoad }, servers, rows, retryBreakdown: breakdown, failures }, null, 2)}\n`,
  );
} else {
  const spreadName = rounds >= 10 ? 'p10–p90' : 'min–max';
  process.stdout.write(
    `${jobs} jobs per run, ${jobMs === 0 ? 'no-op' : `${jobMs} ms`} jobs, concurrency ${concurrency} per process, ${rounds} alternated round(s): median (${spreadName}); ${servers.join('; ')}; load average ${startLoad.join(' ')} at the start, ${endLoad.join(' ')} at the end\n`,
  );
  process.stdout.write(
    'CPU = worker processes + server(s), µs per job; cmds = server commands per job (PostgreSQL: statements); extra on the retry path = per retried job\n\n',
  );
  const fmt = (s: Spread, digits = 0) =>
    `${s.median.toFixed(digits)} (${s.low.toFixed(digits)}–${s.high.toFixed(digits)})`;
  const header = [
    'cell',
    'path',
    'procs',
    'bare CPU',
    'stormguard CPU',
    'ratio',
    'bare worker',
    'sg worker',
    'bare server',
    'sg server',
    'bare cmds',
    'sg cmds',
    'extra cmds',
    'goal',
    'bare jobs/s',
    'sg jobs/s',
    'load',
  ];
  const table = rows.map((r) => [
    r.cell,
    r.path,
    String(r.processes),
    fmt(r.bare.cpuMicrosPerJob),
    fmt(r.stormguard.cpuMicrosPerJob),
    fmt(r.cpuRatio, 2),
    String(Math.round(r.bare.workerCpuMicrosPerJob.median)),
    String(Math.round(r.stormguard.workerCpuMicrosPerJob.median)),
    String(Math.round(r.bare.serverCpuMicrosPerJob.median)),
    String(Math.round(r.stormguard.serverCpuMicrosPerJob.median)),
    r.bare.commandsPerJob.toFixed(2),
    r.stormguard.commandsPerJob.toFixed(2),
    signed(r.extraCommandsPerJob.median),
    `${r.goal} ${r.met ? 'met' : 'MISSED'}`,
    String(Math.round(r.bare.jobsPerSecond)),
    String(Math.round(r.stormguard.jobsPerSecond)),
    r.loadAverage.toFixed(2),
  ]);
  process.stdout.write(`${formatTable([header, ...table], 3)}\n`);
  for (const r of rows)
    if (r.bare.lostJobs + r.stormguard.lostJobs > 0)
      process.stdout.write(
        `${r.cell} ${r.path} ${r.processes}: jobs that ended failed (not on purpose) over the rounds: bare ${r.bare.lostJobs}, stormguard ${r.stormguard.lostJobs}\n`,
      );
  if (breakdown) {
    process.stdout.write(
      `\nredis, retry path, ${breakdown.processes} process(es), ${breakdown.jobs} jobs under MONITOR: stormguard's extra commands per retried job by component\n`,
    );
    const components = new Map<string, number>();
    for (const r of breakdown.rows)
      components.set(r.component, (components.get(r.component) ?? 0) + r.stormguard - r.bare);
    process.stdout.write(
      `${formatTable([['component', 'extra'], ...[...components].map(([c, n]) => [c, signed(n)])])}\n`,
    );
    process.stdout.write('\nthe same by command\n');
    process.stdout.write(
      `${formatTable(
        [
          ['component', 'command', 'bare', 'stormguard', 'extra'],
          ...breakdown.rows.map((r) => [
            r.component,
            r.command,
            r.bare.toFixed(2),
            r.stormguard.toFixed(2),
            signed(r.stormguard - r.bare),
          ]),
        ],
        2,
      )}\n`,
    );
  }
}

function signed(n: number): string {
  return `${n >= 0 ? '+' : ''}${n.toFixed(2)}`;
}

function round2(n: number): number {
  return Number(n.toFixed(2));
}

function round3(n: number): number {
  return Number(n.toFixed(3));
}

/** The command line; a bad value names the option, exit 2. */
function args() {
  const { values } = parseArgs({
    options: {
      cells: { type: 'string', default: 'redis,cluster,postgres' },
      procs: { type: 'string', default: '1,2,4,8' },
      paths: { type: 'string', default: 'success,retry' },
      jobs: { type: 'string' },
      rounds: { type: 'string' },
      concurrency: { type: 'string', default: '10' },
      'job-ms': { type: 'string', default: '0' },
      'cpu-prof': { type: 'string' },
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const jobs = Number(values.jobs ?? (values.quick ? 1_000 : 2_000));
  const rounds = Number(values.rounds ?? (values.quick ? 2 : 3));
  const concurrency = Number(values.concurrency);
  const jobMs = Number(values['job-ms']);
  const procs = values.procs.split(',').map(Number);
  const cells = values.cells.split(',') as CellName[];
  const paths = values.paths.split(',') as Path[];
  const whole = (n: number, min: number) => Number.isInteger(n) && n >= min;
  if (
    !whole(jobs, 1) ||
    !whole(rounds, 1) ||
    !whole(concurrency, 1) ||
    !whole(jobMs, 0) ||
    !procs.every((n) => whole(n, 1) && n <= 64) ||
    !cells.every((c) => ['redis', 'cluster', 'postgres', 'redis-pg'].includes(c)) ||
    !paths.every((p) => ['success', 'retry'].includes(p))
  ) {
    process.stderr.write(
      '--jobs, --rounds and --concurrency must be whole numbers >= 1, --job-ms one >= 0, --procs a comma-separated list of 1 to 64, --cells of redis, cluster, postgres and redis-pg, --paths of success and retry\n',
    );
    process.exit(2);
  }
  const cpuProf = values['cpu-prof'] === undefined ? undefined : resolve(values['cpu-prof']);
  if (cpuProf) mkdirSync(cpuProf, { recursive: true });
  return { jobs, rounds, concurrency, jobMs, procs, cells, paths, cpuProf, json: values.json === true };
}
