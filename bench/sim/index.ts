/**
 * Simulator throughput: simulated jobs per second of wall time, and the time to simulate 1 000 000 jobs over
 * one virtual hour (goal: under 10 s on a 2-core machine).
 *
 * Each strategy runs alone on the same scenario, so the naive "ceiling only" strategy (no budget: one
 * synchronous decision per failure, but four times the retries during the outage) is the baseline the
 * budget strategies (an awaited budget check per failure) are read against. Sizes scale 10× to show the
 * cost per job stays flat. CPU time is printed beside wall time because a shared machine's load inflates
 * the wall clock. The opt-in `budget-and-breaker` strategy runs at the smallest size only: every attempt the
 * open breaker refuses goes through `acquire` and `decide`, which makes it several times slower per job.
 *
 *   npx tsx bench/sim/index.ts            # table
 *   npx tsx bench/sim/index.ts --json     # machine-readable
 *   npx tsx bench/sim/index.ts --quick    # 100 000 jobs only
 */
import { cpus } from 'node:os';
import { parseScenario } from '../../src/sim/scenario/load.js';
import { DEFAULT_STRATEGIES, STRATEGY_KINDS } from '../../src/sim/scenario/schema.js';
import { simulate } from '../../src/sim/simulate.js';
import { benchScenario } from './scenario.js';

interface Row {
  jobs: number;
  strategy: string;
  events: number;
  retries: number;
  wallMs: number;
  cpuMs: number;
  jobsPerSecond: number;
  vsBaseline: number;
}

const json = process.argv.includes('--json');
const sizes = process.argv.includes('--quick') ? [100_000] : [100_000, 1_000_000];

async function measure(jobs: number, strategy: string): Promise<Omit<Row, 'vsBaseline'>> {
  const scenario = parseScenario(benchScenario(jobs));
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await simulate(scenario, { strategies: [strategy] });
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const s = result.strategies[0]!;
  return {
    jobs: s.jobs,
    strategy,
    events: s.events,
    retries: Object.values(s.requests).reduce((n, r) => n + r.retries, 0),
    wallMs: Math.round(wallMs),
    cpuMs: Math.round((used.user + used.system) / 1_000),
    jobsPerSecond: Math.round(s.jobs / (wallMs / 1_000)),
  };
}

// Warm the JIT on a small run so the first measured row is not charged for compilation.
await simulate(parseScenario(benchScenario(20_000)));

const rows: Row[] = [];
const allStrategies: { jobs: number; wallMs: number; cpuMs: number }[] = [];
for (const jobs of sizes) {
  let baseline = 0;
  for (const strategy of jobs === sizes[0] ? STRATEGY_KINDS : DEFAULT_STRATEGIES) {
    const row = await measure(jobs, strategy);
    if (strategy === 'ceiling-only') baseline = row.jobsPerSecond;
    rows.push({ ...row, vsBaseline: Math.round((row.jobsPerSecond / baseline) * 100) / 100 });
  }
  const cpu = process.cpuUsage();
  const started = performance.now();
  await simulate(parseScenario(benchScenario(jobs)));
  const used = process.cpuUsage(cpu);
  allStrategies.push({
    jobs,
    wallMs: Math.round(performance.now() - started),
    cpuMs: Math.round((used.user + used.system) / 1_000),
  });
}

const oneMillion = rows.filter((r) => r.jobs > 900_000 && DEFAULT_STRATEGIES.some((k) => k === r.strategy));
const worstMs = oneMillion.length > 0 ? Math.max(...oneMillion.map((r) => r.wallMs)) : undefined;
const machine = { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version };

if (json) {
  process.stdout.write(
    `${JSON.stringify({ machine, goal: { jobs: 1_000_000, virtualTime: '1h', underMs: 10_000 }, rows, allStrategies, oneMillionWorstStrategyMs: worstMs }, null, 2)}\n`,
  );
} else {
  const header = [
    'jobs',
    'strategy',
    'events',
    'retries',
    'wall ms',
    'cpu ms',
    'jobs/s (wall)',
    'vs ceiling only',
  ];
  const table = rows.map((r) => [
    r.jobs.toLocaleString('en-US'),
    r.strategy,
    r.events.toLocaleString('en-US'),
    r.retries.toLocaleString('en-US'),
    r.wallMs.toLocaleString('en-US'),
    r.cpuMs.toLocaleString('en-US'),
    r.jobsPerSecond.toLocaleString('en-US'),
    `${r.vsBaseline.toFixed(2)}×`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  process.stdout.write(
    `simulator throughput (${machine.cpus} cpus, ${machine.model}, node ${machine.node})\n`,
  );
  process.stdout.write(
    `scenario: steady arrivals over one virtual hour, search down 10 min from 0:20, degraded 5 min\n\n`,
  );
  process.stdout.write(`${line(header)}\n${table.map(line).join('\n')}\n\n`);
  for (const a of allStrategies)
    process.stdout.write(
      `the three default strategies in one simulate(), ${a.jobs.toLocaleString('en-US')} jobs each: ${a.wallMs.toLocaleString('en-US')} ms wall, ${a.cpuMs.toLocaleString('en-US')} ms cpu\n`,
    );
  if (worstMs !== undefined)
    process.stdout.write(
      `1 000 000 jobs over one virtual hour: ${worstMs.toLocaleString('en-US')} ms wall for the slowest default strategy (goal: under 10 000 ms) ${worstMs < 10_000 ? 'ok' : 'MISSED'}\n`,
    );
}
