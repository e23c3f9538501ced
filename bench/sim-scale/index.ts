/**
 * Internet scale, simulated: 10 000 workers, 50 dependencies, 10 000 000 jobs over a virtual day, three
 * overlapping outages (scenario.ts). Goal, per strategy, for ceiling-only, fleet-budget and flow-control:
 * under 60 s of wall time and under 2 GB of memory on a 2-core machine; the other strategies are reported.
 *
 * Every strategy the simulator knows runs alone, in a child process of its own, so its peak resident set is
 * its own (a process's RSS never shrinks back). Each child reports wall and CPU time, peak RSS, the peak of
 * V8's heap plus typed-array memory (sampled at the engine's progress reports), and what the run did.
 * Ceiling-only, the cheapest per event, is the baseline the others are read against. A child that runs past
 * `--timeout` seconds is stopped and reported as such.
 *
 *   npx tsx bench/sim-scale/index.ts                    # table, 10 000 000 jobs
 *   npx tsx bench/sim-scale/index.ts --json             # machine-readable
 *   npx tsx bench/sim-scale/index.ts --jobs 1000000     # a tenth of the day's jobs
 *   npx tsx bench/sim-scale/index.ts --strategies ceiling-only,fleet-budget --timeout 300
 */
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseScenario } from '../../src/sim/scenario/load.js';
import { STRATEGY_KINDS } from '../../src/sim/scenario/schema.js';
import { simulate } from '../../src/sim/simulate.js';
import { formatTable } from '../common.js';
import { scaleScenario } from './scenario.js';

/** What one strategy's child process reports. */
interface Figures {
  strategy: string;
  jobs: number;
  events: number;
  retries: number;
  completed: number;
  deadLettered: number;
  unfinished: number;
  wallMs: number;
  cpuMs: number;
  peakRssMb: number;
  /** The highest V8 heap plus typed-array memory seen at a progress report. */
  peakHeapMb: number;
}

type Row = Figures & { goal: boolean; withinGoal: boolean; vsBaseline: number };
type Failure = { strategy: string; goal: boolean; error: string };

const GOAL_MS = 60_000;
const GOAL_MB = 2_048;
/** The strategies the goal is set for; flow-control is measured as soon as the simulator knows it. */
const GOAL_STRATEGIES = ['ceiling-only', 'fleet-budget', 'flow-control'];

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '10000000' },
    strategies: { type: 'string' },
    timeout: { type: 'string', default: '600' },
    json: { type: 'boolean', default: false },
    child: { type: 'string' },
  },
});
const jobs = Number(values.jobs);
const timeoutS = Number(values.timeout);
const known: readonly string[] = STRATEGY_KINDS;
const chosen = values.strategies ? values.strategies.split(',') : [...known];
const unknown = chosen.filter((s) => !known.includes(s));
if (!Number.isInteger(jobs) || jobs < 1 || !(timeoutS > 0) || unknown.length > 0) {
  process.stderr.write(
    `--jobs must be a whole number >= 1, --timeout a number of seconds > 0, --strategies some of ${known.join(', ')}${unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''}\n`,
  );
  process.exit(2);
}

if (values.child !== undefined) await child(values.child);
else await parent();

/** Runs one strategy and prints its figures as one JSON line. */
async function child(strategy: string): Promise<void> {
  const scenario = parseScenario(scaleScenario(jobs));
  let peakHeap = 0;
  const sampleHeap = () => {
    const m = process.memoryUsage();
    peakHeap = Math.max(peakHeap, m.heapUsed + m.arrayBuffers);
  };
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await simulate(scenario, { strategies: [strategy], onProgress: sampleHeap });
  const wallMs = performance.now() - started;
  sampleHeap();
  const used = process.cpuUsage(cpu);
  const s = result.strategies[0]!;
  const figures: Figures = {
    strategy,
    jobs: s.jobs,
    events: s.events,
    retries: Object.values(s.requests).reduce((n, r) => n + r.retries, 0),
    completed: s.completed,
    deadLettered: Object.values(s.deadLettered).reduce((a, b) => a + b, 0),
    unfinished: s.unfinished,
    wallMs: Math.round(wallMs),
    cpuMs: Math.round((used.user + used.system) / 1_000),
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1_024),
    peakHeapMb: Math.round(peakHeap / 1_048_576),
  };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

/** Runs the child for `strategy`, stopping it after `--timeout` seconds. */
function runChild(strategy: string): Promise<Figures | string> {
  const file = fileURLToPath(import.meta.url);
  return new Promise((resolve) => {
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', file, '--child', strategy, '--jobs', String(jobs)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutS * 1_000);
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as Figures);
      else if (signal === 'SIGKILL') resolve(`did not finish within ${timeoutS} s (stopped)`);
      else resolve(`exited with ${code ?? signal}`);
    });
  });
}

async function parent(): Promise<void> {
  const machine = { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version };
  const rows: Row[] = [];
  const failures: Failure[] = [];
  let baselineMs: number | undefined;
  // The baseline first, so every other row can be read against it.
  const order = [...chosen].sort((a, b) => Number(b === 'ceiling-only') - Number(a === 'ceiling-only'));
  for (const strategy of order) {
    if (!values.json) process.stderr.write(`${strategy}…\n`);
    const figures = await runChild(strategy);
    const goal = GOAL_STRATEGIES.includes(strategy);
    if (typeof figures === 'string') {
      failures.push({ strategy, goal, error: figures });
      continue;
    }
    if (strategy === 'ceiling-only') baselineMs = figures.wallMs;
    rows.push({
      ...figures,
      goal,
      withinGoal: figures.wallMs < GOAL_MS && figures.peakRssMb < GOAL_MB,
      vsBaseline: baselineMs ? Math.round((figures.wallMs / baselineMs) * 100) / 100 : 1,
    });
  }
  const missing = GOAL_STRATEGIES.filter((s) => !known.includes(s));
  const scenario = {
    jobs,
    workers: 10_000,
    dependencies: 50,
    virtualTime: '24h',
    outages: 3,
  };
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ machine, scenario, goal: { underMs: GOAL_MS, underMb: GOAL_MB, strategies: GOAL_STRATEGIES }, rows, failures, notYetInSimulator: missing }, null, 2)}\n`,
    );
    return;
  }
  const n = (x: number) => x.toLocaleString('en-US');
  const table = [
    [
      'strategy',
      'jobs',
      'events',
      'retries',
      'wall ms',
      'cpu ms',
      'peak RSS MB',
      'peak heap MB',
      'vs ceiling',
      'goal',
    ],
    ...rows.map((r) => [
      r.strategy,
      n(r.jobs),
      n(r.events),
      n(r.retries),
      n(r.wallMs),
      n(r.cpuMs),
      n(r.peakRssMb),
      n(r.peakHeapMb),
      `${r.vsBaseline.toFixed(2)}×`,
      r.goal ? (r.withinGoal ? 'met' : 'MISSED') : '(reported)',
    ]),
  ];
  process.stdout.write(
    `internet-scale simulation (${machine.cpus} cpus, ${machine.model}, node ${machine.node})\n`,
  );
  process.stdout.write(
    `scenario: ${n(jobs)} jobs over a virtual day, 10,000 workers, 50 dependencies, three overlapping outages\n`,
  );
  process.stdout.write(`goal for ${GOAL_STRATEGIES.join(', ')}: under 60 s and under 2 GB each\n\n`);
  process.stdout.write(`${formatTable(table)}\n`);
  for (const f of failures)
    process.stdout.write(`${f.strategy}: ${f.error}${f.goal ? ' (goal MISSED)' : ''}\n`);
  if (missing.length > 0) process.stdout.write(`not in the simulator yet: ${missing.join(', ')}\n`);
}
