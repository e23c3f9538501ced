import { beforeAll, describe, expect, it } from 'vitest';
import type { SimulationResult, StrategyResult } from '../../src/sim/results.js';
import { DEFAULT_SCENARIO, defaultScenario } from '../../src/sim/scenario/default.js';
import { parseScenario } from '../../src/sim/scenario/load.js';
import type { Scenario, ScenarioInput } from '../../src/sim/scenario/schema.js';
import { simulate } from '../../src/sim/simulate.js';

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
const byName = (r: SimulationResult, name: string) => r.strategies.find((s) => s.name === name)!;

/** The seconds of the run that overlap one of search's periods in `states` (whole seconds: the timeline's bins). */
function secondsOf(result: SimulationResult, states: readonly string[]): number[] {
  const seconds = new Set<number>();
  for (const p of result.dependencies.find((d) => d.name === 'search')!.unhealthy)
    if (states.includes(p.state))
      for (let s = Math.floor(p.fromMs / 1_000); s < Math.ceil(p.untilMs / 1_000); s++) seconds.add(s);
  return [...seconds];
}
const during = (values: readonly number[], seconds: readonly number[]) =>
  sum(seconds.map((s) => values[s] ?? 0));

/**
 * The default outage with the run stopped at `horizon`. The simulation is causal (nothing before the
 * horizon depends on what comes after it), so every figure of the seconds before it is the full run's:
 * the strategies that never drain by themselves are measured over the outage only.
 */
function untilHorizon(horizon: string, strategies: ScenarioInput['strategies']): Scenario {
  return parseScenario({ ...structuredClone(DEFAULT_SCENARIO), horizon, strategies });
}

describe('flow control on the default outage (search down 10 minutes, then degraded 2)', () => {
  let scenario: Scenario;
  let full: SimulationResult;
  let outage: SimulationResult;
  let flow: StrategyResult;
  beforeAll(async () => {
    scenario = defaultScenario();
    full = await simulate(scenario, { strategies: ['flow-control'] });
    flow = byName(full, 'flow-control');
    outage = await simulate(untilHorizon('12m10s', ['ceiling-only', 'budget-and-breaker']));
  }, 120_000);

  it('sends at most 300 retries to search while it is down, against about 170 000 for the ceiling alone', () => {
    const down = secondsOf(full, ['down']);
    expect(during(flow.timeline.search!.retries, down)).toBeLessThanOrEqual(300);
    // Degraded too: the breaker holds the queue until its probes close it.
    expect(flow.requests.search!.retriesWhileDown).toBeLessThanOrEqual(300);
    const ceiling = byName(outage, 'ceiling-only');
    expect(during(ceiling.timeline.search!.retries, down)).toBeGreaterThan(150_000);
  });

  it('completes every job but those with permanent errors, with no replay and none left over', () => {
    expect(Object.keys(flow.deadLettered)).toEqual(['permanent']);
    expect(flow.deadLettered['budget-exhausted']).toBeUndefined();
    expect(flow.deadLettered['breaker-open']).toBeUndefined();
    expect(flow.completed + flow.deadLettered.permanent!).toBe(flow.jobs);
    expect(flow.completedWithoutReplay).toBe(flow.completed);
    expect(flow.lost).toBe(0);
    expect(flow.unfinished).toBe(0);
  });

  it('causes at most 1 % of the queue operations budget + breaker causes during the outage', () => {
    const unhealthy = secondsOf(full, ['down', 'degraded']);
    const breaker = byName(outage, 'budget-and-breaker');
    const flowOps = during(flow.timeline.search!.queueOps, unhealthy);
    const breakerOps = during(breaker.timeline.search!.queueOps, unhealthy);
    expect(breakerOps).toBeGreaterThan(1_000_000); // a million refusals: fetched, refused, delayed again
    expect(flowOps).toBeLessThanOrEqual(breakerOps / 100);
    // The queue is paused, not churned: nothing is fetched only to be refused.
    expect(flow.refused).toBe(0);
  });

  it('ramps up after the breaker closes: no second of the two minutes after recovery exceeds the slow-start ramp', () => {
    const { slowStartMs, floorPerSecond } = scenario.flowControl;
    const starts = flow.slowStartsMs.search!;
    expect(starts.length).toBeGreaterThan(0);
    const t = flow.timeline.search!;
    const calls = t.first.map((n, s) => n + t.retries[s]!);
    // The ramp doubles the admitted rate 10 times over slowStartMs: in a second that ends `e` ms into the
    // ramp, at most floor × 2^(10 e / slowStartMs) calls start, plus the one probe that closed the breaker.
    const limit = (second: number): number => {
      const start = starts.filter((c) => c < (second + 1) * 1_000).at(-1);
      if (start === undefined || (second + 1) * 1_000 - start > slowStartMs) return Number.POSITIVE_INFINITY;
      return floorPerSecond * 2 ** ((10 * ((second + 1) * 1_000 - start)) / slowStartMs) + 1;
    };
    const recovered = Math.ceil(Math.max(...full.dependencies[0]!.unhealthy.map((p) => p.untilMs)) / 1_000);
    const window = Array.from({ length: 120 }, (_, i) => recovered + i);
    const over = window.filter((s) => calls[s]! > limit(s));
    expect(over).toEqual([]);
    // The breaker closed during the degraded phase, so the ramp still runs as search recovers.
    expect(window.filter((s) => Number.isFinite(limit(s))).length).toBeGreaterThan(0);
    // Before the ramp, the breaker held the queue: one probe per half-open period, nothing else.
    const closedAt = Math.floor(starts[0]! / 1_000);
    const down = secondsOf(full, ['down']).filter((s) => s < closedAt);
    expect(Math.max(...down.map((s) => calls[s]!).slice(10))).toBeLessThanOrEqual(1);
    expect(flow.requests.search!.recoveryPeakPerSecond).toBe(Math.max(...window.map((s) => calls[s]!)));
  });

  it("with onExhausted: 'defer', the fleet budget sends no more retries while search is down than with 'dead-letter'", async () => {
    const result = await simulate(
      untilHorizon('12m10s', [
        'fleet-budget',
        { name: 'deferring', kind: 'fleet-budget', budget: { onExhausted: 'defer' } },
      ]),
    );
    const down = secondsOf(result, ['down']);
    const deadLettering = during(byName(result, 'fleet-budget').timeline.search!.retries, down);
    const deferring = during(byName(result, 'deferring').timeline.search!.retries, down);
    expect(deferring).toBeLessThanOrEqual(deadLettering);
    // Before a deferred job asked again, deferring sent more retries than no budget at all (about 300 000).
    expect(deferring).toBeLessThan(1_000);
  }, 60_000);
});

describe('flow control when the budget stops denying (a dependency that fails often but never trips the breaker)', () => {
  it('starts the slow-start ramp once the budget stops denying, and not before', async () => {
    const result = await simulate(
      parseScenario({
        name: 'flaky-crm',
        seed: 7,
        workers: { count: 4, concurrency: 5 },
        jobClasses: {
          sync: {
            dependency: 'crm',
            policy: { maxAttempts: 2, backoff: { type: 'fixed', delayMs: '500ms' }, jitter: 'none' },
          },
        },
        arrivals: [{ class: 'sync', rate: 10, until: '2m' }],
        dependencies: {
          crm: {
            latency: '50ms',
            errorRate: 0,
            timeline: [{ from: '30s', until: '60s', state: 'degraded', errorRate: 0.6 }],
          },
        },
        budget: { ratio: 0.1, windowMs: '10s', minAllowance: 5, onExhausted: 'dead-letter' },
        // Failures never open this breaker: only the budget's denials mark crm down.
        breaker: { consecutiveFailures: 1_000_000, failureRateThreshold: 1, minimumVolume: 1_000_000 },
        flowControl: { slowStartMs: '10s', floorPerSecond: 5 },
        strategies: ['flow-control'],
      }),
    );
    const flow = byName(result, 'flow-control');
    const denied = flow.timeline.crm!.denied;
    const lastDenying = denied.findLastIndex((n) => n > 0);
    // The budget denied during the degraded half minute (and long after, as deferred jobs asked again).
    expect(denied.findIndex((n) => n > 0)).toBeGreaterThanOrEqual(30);
    expect(lastDenying).toBeGreaterThan(60);
    // One ramp, once no denial is left in the window: not at every gap in the denials.
    expect(flow.slowStartsMs.crm).toHaveLength(1);
    const [start] = flow.slowStartsMs.crm as [number];
    expect(start).toBeGreaterThanOrEqual(lastDenying * 1_000);
    expect(start).toBeLessThanOrEqual((lastDenying + 2) * 1_000);
  }, 60_000);
});
