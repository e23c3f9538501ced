import { beforeAll, describe, expect, it } from 'vitest';
import type { SimulationResult, StrategyResult } from '../../src/sim/results.js';
import { summarize } from '../../src/sim/results.js';
import { defaultScenario } from '../../src/sim/scenario/default.js';
import { exampleScenarioText } from '../../src/sim/scenario/example.js';
import { parseScenarioText } from '../../src/sim/scenario/load.js';
import type { Scenario } from '../../src/sim/scenario/schema.js';
import { simulate } from '../../src/sim/simulate.js';
import { STRATEGY_JSON_FIELDS } from './json-shape.js';

const sum = (values: readonly number[], from = 0, to = values.length) =>
  values.slice(Math.max(0, from), Math.max(0, to)).reduce((a, b) => a + b, 0);
const deadLetters = (s: StrategyResult) => sum(Object.values(s.deadLettered));
const byName = (r: SimulationResult, name: string) => r.strategies.find((s) => s.name === name)!;

/** Every job ends completed or dead-lettered; each made exactly one first attempt. */
function expectConservation(result: SimulationResult): void {
  for (const s of result.strategies) {
    expect(s.lost, s.name).toBe(0);
    expect(s.unfinished, s.name).toBe(0);
    expect(s.completed + deadLetters(s), s.name).toBe(s.jobs);
    // Each job sends one first attempt, unless a breaker refused it every time.
    const firsts = sum(Object.values(s.requests).map((r) => r.first));
    if (s.kind === 'budget-and-breaker' || s.kind === 'flow-control')
      expect(firsts).toBeLessThanOrEqual(s.jobs);
    else expect(firsts, s.name).toBe(s.jobs);
  }
}

/**
 * The most retries a budget of `copies` independent budgets (1 for the fleet, one per worker) can grant,
 * derived from the budget's rules and the run's own successes. Any stretch shorter than the window minus one
 * sub-bucket lies inside the sliding window at its last grant, so its grants are at most that moment's
 * allowance (+1, the design's tolerance) per budget: max(floor, ratio × successes of the window), where the
 * window's successes are at most those of the stretch plus the window and one sub-bucket before it.
 */
function budgetBound(s: StrategyResult, dependency: string, scenario: Scenario, copies: number): number {
  const { ratio, windowMs: window, minAllowance } = scenario.budget;
  const stretch = Math.floor((window - window / 10) / 1_000) - 1;
  const lookBack = Math.ceil((window + window / 10) / 1_000);
  const successes = s.timeline[dependency]!.successes;
  let bound = 0;
  for (let start = 0; start < successes.length; start += stretch) {
    const ratioPart = Math.floor(ratio * sum(successes, start - lookBack, start + stretch));
    // One budget: max(floor, ratio part). Several (per worker) each see a share of the successes: their
    // floors add up and their ratio parts add up to at most the whole one.
    bound += copies === 1 ? Math.max(minAllowance, ratioPart) + 1 : copies * (minAllowance + 1) + ratioPart;
  }
  return bound;
}

describe('the default scenario (40 000 search-indexing jobs, the search cluster goes down)', () => {
  let scenario: Scenario;
  let result: SimulationResult;
  beforeAll(async () => {
    scenario = defaultScenario();
    result = await simulate(scenario);
  }, 60_000);

  it('loses no job: each ends completed or dead-lettered, under every strategy', () => {
    expect(result.strategies.map((s) => s.name)).toEqual([
      'ceiling-only',
      'fleet-budget',
      'per-worker-budgets',
      'flow-control',
    ]);
    expectConservation(result);
    expect(result.strategies[0]!.jobs).toBeGreaterThanOrEqual(40_000);
  });

  it('ceiling only: roughly 4 retries for every job that fails throughout the outage', () => {
    const ceiling = byName(result, 'ceiling-only');
    const exhausted = ceiling.deadLettered['max-attempts'] ?? 0;
    const retries = ceiling.requests.search!.retries;
    // maxAttempts 5 = 4 retries: a job dead-lettered for max-attempts made exactly 5 attempts.
    expect(ceiling.attemptsHistogram.deadLettered[5] ?? 0).toBeGreaterThanOrEqual(exhausted);
    expect(retries).toBeGreaterThanOrEqual(4 * exhausted);
    expect(retries / exhausted).toBeLessThan(4.1);
    // A job whose first attempt came early in the outage has all its attempts inside it (its backoff and a
    // pass through the queue take well under 3 minutes), so it is dead-lettered for max-attempts.
    const down = result.dependencies[0]!.unhealthy.find((p) => p.state === 'down')!;
    const earlyFirsts = sum(
      ceiling.timeline.search!.first,
      Math.ceil(down.fromMs / 1_000),
      Math.floor((down.untilMs - 180_000) / 1_000),
    );
    expect(earlyFirsts).toBeGreaterThan(30_000);
    expect(exhausted).toBeGreaterThanOrEqual(earlyFirsts);
  });

  it('fleet budget: retries stay within floor per window plus ratio × successes', () => {
    const fleet = byName(result, 'fleet-budget');
    const timeline = fleet.timeline.search!;
    // Every retry the dependency saw was granted by the budget first.
    expect(sum(timeline.granted)).toBe(fleet.requests.search!.retries);
    const bound = budgetBound(fleet, 'search', scenario, 1);
    expect(fleet.requests.search!.retries).toBeLessThanOrEqual(bound);
    // The bound itself is the budget's, not the ceiling's: far below what the ceiling alone let through.
    expect(bound).toBeLessThan(byName(result, 'ceiling-only').requests.search!.retries / 20);
    // Sampled each second: spend never exceeds the allowance at its last grant (the design's ±1). A grant is
    // remembered for a window and a sub-bucket (66 s) while the allowance may fall meanwhile, so the
    // allowance to compare with is the highest of those 66 seconds.
    const overspent = timeline.spent.filter(
      (spent, i) => spent > Math.max(...timeline.allowance.slice(Math.max(0, i - 66), i + 1)) + 1,
    );
    expect(overspent).toEqual([]);
    expect(timeline.allowance.length).toBe(result.seconds);
    expect(fleet.deadLettered['budget-exhausted']).toBeGreaterThan(0);
  });

  it('per-worker budgets: the allowance multiplies with the workers, so they let more retries through', () => {
    const fleet = byName(result, 'fleet-budget');
    const perWorker = byName(result, 'per-worker-budgets');
    const workers = scenario.workers.count;
    expect(perWorker.requests.search!.retries).toBeGreaterThan(fleet.requests.search!.retries);
    expect(perWorker.requests.search!.retries).toBeLessThanOrEqual(
      budgetBound(perWorker, 'search', scenario, workers),
    );
    // Summed over the workers, the floor alone is workers × minAllowance per window while nothing succeeds.
    const down = result.dependencies[0]!.unhealthy[0]!;
    const lateInOutage = Math.floor(down.untilMs / 1_000) - 30;
    if (perWorker.timeline.search!.first[lateInOutage]! > 0)
      expect(perWorker.timeline.search!.allowance[lateInOutage]).toBe(workers * scenario.budget.minAllowance);
  });

  it('reports the peak retry rate while the dependency was down', () => {
    const ceiling = byName(result, 'ceiling-only');
    const down = result.dependencies[0]!.unhealthy;
    const retries = ceiling.timeline.search!.retries;
    const during = down.flatMap((p) =>
      retries.slice(Math.floor(p.fromMs / 1_000), Math.ceil(p.untilMs / 1_000)),
    );
    expect(ceiling.peakRetriesPerSecond).toBe(Math.max(...during));
    expect(ceiling.peakRetriesPerSecond).toBeGreaterThan(byName(result, 'fleet-budget').peakRetriesPerSecond);
  });
});

describe('determinism and the example scenario', () => {
  let example: Scenario;
  let first: SimulationResult;
  beforeAll(async () => {
    example = parseScenarioText(await exampleScenarioText(), 'example.yaml');
    first = await simulate(example);
  }, 60_000);

  it('the same scenario and seed give the same result, byte for byte', async () => {
    const again = await simulate(example);
    expect(JSON.stringify(again)).toBe(JSON.stringify(first));
  });

  it('another seed gives another result', async () => {
    const other = await simulate(example, { seed: example.seed + 1 });
    expect(other.seed).toBe(example.seed + 1);
    expect(JSON.stringify(summarize(other))).not.toBe(JSON.stringify(summarize(first)));
  });

  it('the example runs as printed: every strategy, no job lost, two dependencies', () => {
    expectConservation(first);
    expect(first.strategies.map((s) => s.name)).toEqual([
      'ceiling-only',
      'fleet-budget',
      'per-worker-budgets',
      'deferring-budget',
      'budget-and-breaker',
      'flow-control',
    ]);
    expect(Object.keys(first.strategies[0]!.requests)).toEqual(['mail', 'crm']);
    // The breaker refuses calls only once the outage has made calls fail, never before.
    const breaker = byName(first, 'budget-and-breaker');
    const mailDown = first.dependencies.find((d) => d.name === 'mail')!.unhealthy[0]!;
    const refused = breaker.timeline.mail!.refused;
    expect(sum(refused)).toBeGreaterThan(0);
    expect(sum(refused, 0, Math.floor(mailDown.fromMs / 1_000))).toBe(0);
    expect(sum(breaker.timeline.crm!.refused)).toBe(0);
    const deferring = byName(first, 'deferring-budget');
    // Deferral reschedules instead of spending an attempt.
    expect(sum(deferring.timeline.mail!.deferred)).toBeGreaterThan(0);
  });

  it("the example's breaker drains: it closes once mail recovers, so no job waits out its max age", () => {
    const breaker = byName(first, 'budget-and-breaker');
    const unhealthy = first.dependencies.find((d) => d.name === 'mail')!.unhealthy;
    const recoveredMs = Math.max(...unhealthy.map((u) => u.untilMs));
    // Healthy again, the breaker half-opens within one cool-down and its first probes (300 ms calls)
    // close it: no refusal a second after that.
    const lastRefusalSecond = Math.floor((recoveredMs + example.breaker.coolDownMs!) / 1_000) + 1;
    const refused = breaker.timeline.mail!.refused;
    expect(sum(refused, lastRefusalSecond + 1)).toBe(0);
    // The outage plus a cool-down (12.5 min) is far inside the 30 min max age: the breaker holds jobs back,
    // it never makes them too old, and the run ends with the arrivals (20 min) as the other strategies do.
    expect(breaker.deadLettered['breaker-open'] ?? 0).toBe(0);
    expect(breaker.unfinished).toBe(0);
    expect(breaker.drainMs).toBeLessThan(21 * 60_000);
  });

  it('each strategy reports what it cost: refusals, queue operations, retries while down, the rush after recovery', () => {
    const mail = first.dependencies.find((d) => d.name === 'mail')!;
    const unhealthy = new Set<number>();
    for (const p of mail.unhealthy)
      for (let i = Math.floor(p.fromMs / 1_000); i < Math.ceil(p.untilMs / 1_000); i++) unhealthy.add(i);
    const recoveredAt = Math.ceil(Math.max(...mail.unhealthy.map((p) => p.untilMs)) / 1_000);
    for (const s of first.strategies) {
      const t = s.timeline.mail!;
      expect(s.requests.mail!.retriesWhileDown, s.name).toBe(
        sum(t.retries.filter((_, i) => unhealthy.has(i))),
      );
      const calls = t.first.map((n, i) => n + t.retries[i]!).slice(recoveredAt, recoveredAt + 120);
      expect(s.requests.mail!.recoveryPeakPerSecond, s.name).toBe(Math.max(...calls));
      expect(s.requests.crm).toMatchObject({ retriesWhileDown: 0, recoveryPeakPerSecond: 0 });
      const timelines = Object.values(s.timeline);
      expect(s.refused, s.name).toBe(sum(timelines.flatMap((d) => d.refused)));
      expect(s.queueOps, s.name).toBe(sum(timelines.flatMap((d) => d.queueOps)));
      // Every job is fetched at least once, and every retry or deferral is moved back once.
      expect(s.queueOps, s.name).toBeGreaterThanOrEqual(
        s.jobs + sum(timelines.flatMap((d) => [...d.granted, ...d.deferred])),
      );
      expect(s.completedWithoutReplay).toBe(s.completed);
    }
    expect(byName(first, 'ceiling-only').refused).toBe(0);
    // An open breaker turns calls into refusals: fetched, refused, moved back.
    expect(byName(first, 'budget-and-breaker').refused).toBeGreaterThan(1_000);
  });

  it('a deferred retry asks the budget again before it calls: deferring sends no more retries while mail is down than dead-lettering does', () => {
    const down = first.dependencies
      .find((d) => d.name === 'mail')!
      .unhealthy.filter((p) => p.state === 'down');
    const whileDown = (s: StrategyResult) =>
      sum(down.flatMap((p) => s.timeline.mail!.retries.slice(p.fromMs / 1_000, p.untilMs / 1_000)));
    const deadLettering = byName(first, 'fleet-budget');
    const deferring = byName(first, 'deferring-budget');
    // Both are held to the same allowance; each budget window may grant one more than it allows (the
    // budget's stated tolerance), and the deferred jobs waiting for a grant take every one there is.
    const windows = sum(down.map((p) => Math.ceil((p.untilMs - p.fromMs) / example.budget.windowMs)));
    expect(whileDown(deferring)).toBeLessThanOrEqual(whileDown(deadLettering) + windows);
    // Without asking again, every deferred job came back and called: far more than the allowance.
    expect(whileDown(deferring)).toBeLessThan(whileDown(byName(first, 'ceiling-only')) / 20);
    // Asking again is what a deferred job does at each return while the budget stays exhausted.
    expect(deferring.refused).toBeGreaterThan(sum(deferring.timeline.mail!.deferred) / 2);
  });

  it('stops when its signal is aborted (the CLI passes Ctrl-C)', async () => {
    const controller = new AbortController();
    let reports = 0;
    const run = simulate(example, {
      signal: controller.signal,
      onProgress: () => {
        if (++reports === 1) controller.abort();
      },
    });
    await expect(run).rejects.toThrow('simulation interrupted');
    expect(reports).toBe(1);
  });

  it('summarize gives exactly the --json fields', () => {
    const summary = summarize(first);
    expect(Object.keys(summary)).toEqual(['scenario', 'seed', 'strategies']);
    expect(Object.keys(summary.strategies[0]!)).toEqual(STRATEGY_JSON_FIELDS);
  });
});
