/**
 * What flow control costs and saves on the simulator's default outage (search down 10 minutes, then degraded
 * 2), side by side with the strategies it is read against: the ceiling alone, the fleet budget (with
 * `onExhausted: 'dead-letter'` and `'defer'`), and budget + breaker. Prints, per strategy, the retries that
 * reached search while it was down (and while down or degraded), jobs completed without a replay, dead
 * letters, attempts refused before calling, queue operations while search was down or degraded and in all,
 * and the busiest second of calls in the two minutes after recovery; then the goals, checked.
 *
 * The figures are virtual-time counts from a seeded, deterministic run: the machine's load changes how long
 * the run takes, never what it prints.
 *
 *   npx tsx bench/sim/flow-control.ts           # table
 *   npx tsx bench/sim/flow-control.ts --json    # machine-readable
 */
import type { SimulationResult, StrategyResult } from '../../src/sim/results.js';
import { DEFAULT_SCENARIO } from '../../src/sim/scenario/default.js';
import { parseScenario } from '../../src/sim/scenario/load.js';
import type { ScenarioInput } from '../../src/sim/scenario/schema.js';
import { simulate } from '../../src/sim/simulate.js';

const json = process.argv.includes('--json');

const strategies: ScenarioInput['strategies'] = [
  'ceiling-only',
  'fleet-budget',
  { name: 'fleet-budget-defer', kind: 'fleet-budget', budget: { onExhausted: 'defer' } },
  'budget-and-breaker',
  'flow-control',
];
const scenario = parseScenario({ ...structuredClone(DEFAULT_SCENARIO), strategies });
const started = performance.now();
const result = await simulate(scenario);
const wallMs = Math.round(performance.now() - started);

function secondsOf(r: SimulationResult, states: readonly string[]): number[] {
  const seconds = new Set<number>();
  for (const p of r.dependencies.find((d) => d.name === 'search')?.unhealthy ?? [])
    if (states.includes(p.state))
      for (let s = Math.floor(p.fromMs / 1_000); s < Math.ceil(p.untilMs / 1_000); s++) seconds.add(s);
  return [...seconds];
}
const down = secondsOf(result, ['down']);
const unhealthy = secondsOf(result, ['down', 'degraded']);
const during = (values: readonly number[], seconds: readonly number[]) =>
  seconds.reduce((n, s) => n + (values[s] ?? 0), 0);

const rows = result.strategies.map((s: StrategyResult) => {
  const t = s.timeline.search!;
  return {
    strategy: s.name,
    retriesWhileSearchDown: during(t.retries, down),
    retriesWhileDownOrDegraded: s.requests.search!.retriesWhileDown,
    completedWithoutReplay: s.completedWithoutReplay,
    deadLettered: s.deadLettered,
    refused: s.refused,
    queueOpsDuringOutage: during(t.queueOps, unhealthy),
    queueOps: s.queueOps,
    recoveryPeakPerSecond: s.requests.search!.recoveryPeakPerSecond,
    slowStartsMs: s.slowStartsMs.search ?? [],
    drainMs: s.drainMs,
  };
});
const row = (name: string) => rows.find((r) => r.strategy === name)!;
const flow = row('flow-control');
const breaker = row('budget-and-breaker');
const flowResult = result.strategies.find((s) => s.name === 'flow-control')!;
const { slowStartMs, floorPerSecond } = scenario.flowControl;
const calls = flowResult.timeline.search!.first.map((n, s) => n + flowResult.timeline.search!.retries[s]!);
const overRamp = calls.filter((n, s) => {
  const start = flow.slowStartsMs.filter((c) => c < (s + 1) * 1_000).at(-1);
  if (start === undefined || (s + 1) * 1_000 - start > slowStartMs) return false;
  return n > floorPerSecond * 2 ** ((10 * ((s + 1) * 1_000 - start)) / slowStartMs) + 1;
}).length;
const permanentOnly = Object.keys(flow.deadLettered).every((reason) => reason === 'permanent');
const goals = {
  retriesWhileDown: {
    flowControl: flow.retriesWhileSearchDown,
    ceilingOnly: row('ceiling-only').retriesWhileSearchDown,
    goal: '<= 300',
    met: flow.retriesWhileSearchDown <= 300,
  },
  completion: {
    completedWithoutReplay: flow.completedWithoutReplay,
    deadLettered: flow.deadLettered,
    goal: 'only permanent dead letters, no replay',
    met: permanentOnly,
  },
  queueOps: {
    flowControl: flow.queueOpsDuringOutage,
    budgetAndBreaker: breaker.queueOpsDuringOutage,
    goal: '<= 1 %',
    met: flow.queueOpsDuringOutage <= breaker.queueOpsDuringOutage / 100,
  },
  slowStart: {
    recoveryPeakPerSecond: flow.recoveryPeakPerSecond,
    secondsOverTheRamp: overRamp,
    goal: 'no second over the ramp',
    met: overRamp === 0,
  },
  defer: {
    defer: row('fleet-budget-defer').retriesWhileSearchDown,
    deadLetter: row('fleet-budget').retriesWhileSearchDown,
    goal: 'defer <= dead-letter',
    met: row('fleet-budget-defer').retriesWhileSearchDown <= row('fleet-budget').retriesWhileSearchDown,
  },
};

if (json) {
  process.stdout.write(
    `${JSON.stringify({ scenario: result.scenario, seed: result.seed, wallMs, rows, goals }, null, 2)}\n`,
  );
} else {
  const n = (v: number) => v.toLocaleString('en-US');
  const header = [
    'strategy',
    'retries (down)',
    'retries (down/degr.)',
    'completed',
    'dead letters',
    'refused',
    'queue ops (outage)',
    'queue ops',
    'peak calls/s after',
  ];
  const table = rows.map((r) => [
    r.strategy,
    n(r.retriesWhileSearchDown),
    n(r.retriesWhileDownOrDegraded),
    n(r.completedWithoutReplay),
    n(Object.values(r.deadLettered).reduce((a, b) => a + b, 0)),
    n(r.refused),
    n(r.queueOpsDuringOutage),
    n(r.queueOps),
    n(r.recoveryPeakPerSecond),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((cells) => cells[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  process.stdout.write(
    `flow control on ${result.scenario} (seed ${result.seed}): search down 0:05–10:05, degraded 10:05–12:05\n\n`,
  );
  process.stdout.write(`${line(header)}\n${table.map(line).join('\n')}\n\n`);
  const ok = (met: boolean) => (met ? 'ok' : 'MISSED');
  process.stdout.write(
    `${[
      `retries to search while down: ${n(goals.retriesWhileDown.flowControl)} (ceiling only ${n(goals.retriesWhileDown.ceilingOnly)}; goal <= 300) ${ok(goals.retriesWhileDown.met)}`,
      `dead letters left: ${JSON.stringify(flow.deadLettered)}, ${n(flow.completedWithoutReplay)} completed without a replay (goal: permanent only) ${ok(goals.completion.met)}`,
      `queue operations while down or degraded: ${n(goals.queueOps.flowControl)} vs ${n(goals.queueOps.budgetAndBreaker)} for budget + breaker (${((100 * goals.queueOps.flowControl) / goals.queueOps.budgetAndBreaker).toFixed(3)} %; goal <= 1 %) ${ok(goals.queueOps.met)}`,
      `slow start from ${flow.slowStartsMs.map((ms) => `${(ms / 1_000).toFixed(1)} s`).join(', ')}: ${overRamp} seconds over the ramp; peak ${n(flow.recoveryPeakPerSecond)} calls/s in the 2 min after recovery ${ok(goals.slowStart.met)}`,
      `fleet budget, retries while down: defer ${n(goals.defer.defer)}, dead-letter ${n(goals.defer.deadLetter)} (goal: defer <= dead-letter) ${ok(goals.defer.met)}`,
      `(${n(wallMs)} ms wall for the five strategies)`,
    ].join('\n')}\n`,
  );
}
