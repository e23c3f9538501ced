/**
 * Internet scale, simulated: 10 000 workers, 50 dependencies, 10 000 000 jobs over a virtual day, three
 * overlapping outages (scenario.ts). Goal, for every strategy: under 60 s of CPU time and under 2 GB of
 * memory on a 2-core machine. CPU time, not wall time, decides: the machine is shared, and its load
 * stretches the wall clock (the load average is printed with the table).
 *
 * Every strategy the simulator knows runs alone, in a child process of its own, so its peak resident set is
 * its own (a process's RSS never shrinks back). Each child reports wall and CPU time, peak RSS, the peak of
 * V8's heap plus typed-array memory (sampled at the engine's progress reports), and what the run did.
 * Ceiling-only, the cheapest per event, is the baseline the others are read against (by CPU time). A child
 * that runs past `--timeout` seconds is stopped and reported as such.
 *
 *   npx tsx bench/sim-scale/index.ts                    # table, 10 000 000 jobs
 *   npx tsx bench/sim-scale/index.ts --json             # machine-readable
 *   npx tsx bench/sim-scale/index.ts --jobs 1000000     # a tenth of the day's jobs
 *   npx tsx bench/sim-scale/index.ts --strategies ceiling-only,fleet-budget --timeout 300
 *   npx tsx bench/sim-scale/index.ts --baseline ../stormguard-main --rounds 2
 *
 * `--baseline DIR` runs each strategy in that checkout too (its own bench/sim-scale and src), alternated
 * with this one round by round (baseline first), so a change is read against its baseline under the same
 * load; each side's row is its round with the least CPU time.
 */
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { resolve as resolvePath } from 'node:path';
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

type Row = Figures & {
  /** `current`, or `baseline` for a row run in the `--baseline` checkout. */
  tree: string;
  goal: boolean;
  withinGoal: boolean;
  vsBaseline: number;
};
type Failure = { strategy: string; tree: string; goal: boolean; error: string };

/** CPU time (user + system) and peak RSS each strategy must stay under. */
const GOAL_CPU_MS = 60_000;
const GOAL_MB = 2_048;

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '10000000' },
    strategies: { type: 'string' },
    timeout: { type: 'string', default: '600' },
    json: { type: 'boolean', default: false },
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '1' },
    child: { type: 'string' },
  },
});
const jobs = Number(values.jobs);
const timeoutS = Number(values.timeout);
const rounds = Number(values.rounds);
const known: readonly string[] = STRATEGY_KINDS;
const chosen = values.strategies ? values.strategies.split(',') : [...known];
const unknown = chosen.filter((s) => !known.includes(s));
/** The goal is set for every strategy the simulator knows. */
const GOAL_STRATEGIES = known;
if (
  !Number.isInteger(jobs) ||
  jobs < 1 ||
  !(timeoutS > 0) ||
  !Number.isInteger(rounds) ||
  rounds < 1 ||
  unknown.length > 0
) {
  process.stderr.write(
    `--jobs and --rounds must be whole numbers >= 1, --timeout a number of seconds > 0, --strategies some of ${known.join(', ')}${unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''}\n`,
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

/**
 * Runs the child for `strategy` (this checkout's, or the one in `root`), stopping it after `--timeout`
 * seconds.
 */
function runChild(strategy: string, root?: string): Promise<Figures | string> {
  const file = root ? resolvePath(root, 'bench/sim-scale/index.ts') : fileURLToPath(import.meta.url);
  return new Promise((resolve) => {
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', file, '--child', strategy, '--jobs', String(jobs)],
      { stdio: ['ignore', 'pipe', 'inherit'], ...(root ? { cwd: resolvePath(root) } : {}) },
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
  const loadBefore = loadavg()[0] as number;
  const rows: Row[] = [];
  const failures: Failure[] = [];
  /** Ceiling-only's CPU time per tree. */
  const ceilingMs = new Map<string, number>();
  // Ceiling-only first, so every other row can be read against it.
  const order = [...chosen].sort((a, b) => Number(b === 'ceiling-only') - Number(a === 'ceiling-only'));
  const trees: { tree: string; root?: string }[] = values.baseline
    ? [{ tree: 'baseline', root: values.baseline }, { tree: 'current' }]
    : [{ tree: 'current' }];
  for (const strategy of order) {
    const goal = GOAL_STRATEGIES.includes(strategy);
    const best = new Map<string, Figures>();
    const failed = new Map<string, string>();
    for (let round = 0; round < rounds; round++)
      for (const { tree, root } of trees) {
        if (failed.has(tree)) continue;
        if (!values.json) process.stderr.write(`${strategy}${trees.length > 1 ? ` (${tree})` : ''}…\n`);
        const figures = await runChild(strategy, root);
        if (typeof figures === 'string') failed.set(tree, figures);
        else if (figures.cpuMs < (best.get(tree)?.cpuMs ?? Number.POSITIVE_INFINITY)) best.set(tree, figures);
      }
    for (const { tree } of trees) {
      const error = failed.get(tree);
      const figures = best.get(tree);
      if (error !== undefined || figures === undefined) {
        failures.push({ strategy, tree, goal, error: error ?? 'no figures' });
        continue;
      }
      if (strategy === 'ceiling-only') ceilingMs.set(tree, figures.cpuMs);
      const baselineMs = ceilingMs.get(tree);
      rows.push({
        ...figures,
        tree,
        goal,
        withinGoal: figures.cpuMs < GOAL_CPU_MS && figures.peakRssMb < GOAL_MB,
        vsBaseline: baselineMs ? Math.round((figures.cpuMs / baselineMs) * 100) / 100 : 1,
      });
    }
  }
  const load = { before: round2(loadBefore), after: round2(loadavg()[0] as number) };
  const scenario = {
    jobs,
    workers: 10_000,
    dependencies: 50,
    virtualTime: '24h',
    outages: 3,
  };
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ machine, load, scenario, baseline: values.baseline ?? null, rounds, goal: { underCpuMs: GOAL_CPU_MS, underMb: GOAL_MB, strategies: GOAL_STRATEGIES }, rows, failures }, null, 2)}\n`,
    );
    return;
  }
  const n = (x: number) => x.toLocaleString('en-US');
  const table = [
    [
      'strategy',
      ...(values.baseline ? ['tree'] : []),
      'jobs',
      'events',
      'retries',
      'wall ms',
      'cpu ms',
      'peak RSS MB',
      'peak heap MB',
      'cpu vs ceiling',
      'goal',
    ],
    ...rows.map((r) => [
      r.strategy,
      ...(values.baseline ? [r.tree] : []),
      n(r.jobs),
      n(r.events),
      n(r.retries),
      n(r.wallMs),
      n(r.cpuMs),
      n(r.peakRssMb),
      n(r.peakHeapMb),
      `${r.vsBaseline.toFixed(2)}×`,
      r.withinGoal ? 'met' : 'MISSED',
    ]),
  ];
  process.stdout.write(
    `internet-scale simulation (${machine.cpus} cpus, ${machine.model}, node ${machine.node})\n`,
  );
  if (values.baseline)
    process.stdout.write(
      `baseline: ${values.baseline}, alternated with this checkout, ${rounds} round(s), least CPU kept\n`,
    );
  process.stdout.write(
    `scenario: ${n(jobs)} jobs over a virtual day, 10,000 workers, 50 dependencies, three overlapping outages\n`,
  );
  process.stdout.write(
    `goal for every strategy: under 60 s of CPU and under 2 GB each; load average ${load.before} before, ${load.after} after\n\n`,
  );
  process.stdout.write(`${formatTable(table)}\n`);
  for (const f of failures)
    process.stdout.write(
      `${f.strategy}${values.baseline ? ` (${f.tree})` : ''}: ${f.error}${f.goal ? ' (goal MISSED)' : ''}\n`,
    );
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
