import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scaleScenario } from '../../bench/sim-scale/scenario.js';
import { run } from '../../src/cli/program.js';
import { lineProgress } from '../../src/cli/progress.js';
import { estimateSimulationCost, SIMULATION_LIMITS } from '../../src/cli/simulation-cost.js';
import { FakeClock } from '../../src/common/clock.js';
import { defaultScenario } from '../../src/sim/scenario/default.js';
import { parseScenario } from '../../src/sim/scenario/load.js';
import { DEFAULT_STRATEGIES, STRATEGY_KINDS } from '../../src/sim/scenario/schema.js';

// `stormguard simulate` estimates a scenario's cost before it runs and refuses one past the limits (exit 2)
// unless --allow-large is given; a run with no terminal reports progress in lines.

const dir = mkdtempSync(join(tmpdir(), 'stormguard-sim-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function scenarioFile(name: string, scenario: unknown): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(scenario));
  return path;
}

/** The CLI in this process; the run is stopped after `stopAfterMs` (a refusal answers long before). */
async function stormguard(args: string[], stopAfterMs = 60_000) {
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    signal: AbortSignal.timeout(stopAfterMs),
  });
  return { code, stdout, stderr };
}

describe('the estimate', () => {
  it('lets the built-in scenario and one strategy of the 10 000 000-job bench through, and stops 50 000 000 jobs', () => {
    const builtIn = estimateSimulationCost(defaultScenario(), STRATEGY_KINDS);
    expect(builtIn.jobs).toBeGreaterThanOrEqual(40_000);
    expect(builtIn.attempts).toBeGreaterThanOrEqual(5 * 40_000);
    expect(builtIn.seconds).toBeLessThan(5);
    // bench/sim-scale at ten million jobs, each strategy alone: let through, and estimated above the CPU
    // time and peak RSS it took on a loaded 2-core machine (docs/benchmarks.md).
    const bench = parseScenario(scaleScenario(10_000_000));
    const measured = {
      'ceiling-only': { seconds: 6.0, memoryMb: 470 },
      'fleet-budget': { seconds: 10.0, memoryMb: 559 },
      'per-worker-budgets': { seconds: 43.7, memoryMb: 990 },
      'budget-and-breaker': { seconds: 50.7, memoryMb: 569 },
      'flow-control': { seconds: 49.2, memoryMb: 599 },
      'budget-and-limits': { seconds: 10.3, memoryMb: 568 },
    } as const;
    for (const [kind, took] of Object.entries(measured)) {
      const alone = estimateSimulationCost(bench, [kind as keyof typeof measured]);
      expect(alone.seconds, kind).toBeGreaterThan(took.seconds);
      expect(alone.seconds, kind).toBeLessThan(SIMULATION_LIMITS.seconds);
      expect(alone.memoryMb, kind).toBeGreaterThan(took.memoryMb);
      expect(alone.memoryMb, kind).toBeLessThan(SIMULATION_LIMITS.memoryMb);
    }
    // Its five strategies in one process keep five sets of day-long timelines for 50 dependencies.
    expect(estimateSimulationCost(bench, STRATEGY_KINDS).memoryMb).toBeGreaterThan(
      SIMULATION_LIMITS.memoryMb,
    );
    const huge = estimateSimulationCost(parseScenario(scaleScenario(50_000_000)), DEFAULT_STRATEGIES);
    expect(huge.attempts).toBeGreaterThan(249_000_000);
    expect(huge.seconds).toBeGreaterThan(SIMULATION_LIMITS.seconds);
    expect(huge.memoryMb).toBeGreaterThan(SIMULATION_LIMITS.memoryMb);
  });
});

describe('stormguard simulate', () => {
  it('refuses a 50 000 000-job scenario before running it: exit 2, what it adds up to, and the override', async () => {
    const path = scenarioFile('huge', scaleScenario(50_000_000));
    const result = await stormguard(['simulate', '--scenario', path], 20_000);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /^stormguard: --scenario: 5\d,\d{3},\d{3} jobs of up to 2\d\d,\d{3},\d{3} attempts in all, over 4 strategies, would take about .+ of CPU \(limit 5m\) and about [\d,]+ MB of memory \(limit 2,048 MB\); .*--allow-large to run it anyway/,
    );
    expect(result.code).toBe(2);
  });

  it('runs a refused scenario with --allow-large', async () => {
    // 400 000 jobs that may each make 1 000 attempts, under the costliest strategy: refused on the bound,
    // though a healthy dependency answers each job's first attempt.
    const scenario = {
      name: 'many-attempts',
      horizon: 3_600_000,
      workers: { count: 20, concurrency: 10 },
      jobClasses: {
        job: { dependency: 'api', policy: { maxAttempts: 1_000, backoff: { type: 'fixed', delayMs: 100 } } },
      },
      arrivals: [{ class: 'job', backlog: 400_000 }],
      dependencies: { api: { latency: 20 } },
      strategies: ['budget-and-breaker'],
    };
    const path = scenarioFile('many-attempts', scenario);
    const refused = await stormguard(['simulate', '--scenario', path, '--json']);
    expect(refused.stderr).toMatch(
      /^stormguard: --scenario: 400,000 jobs of up to 400,000,000 attempts in all, over 1 strategy, would take about .+ of CPU \(limit 5m\);/,
    );
    expect(refused.code).toBe(2);
    // Allowed, it runs: it completes (0) or is stopped after a second (1, "interrupted"); never refused.
    const allowed = await stormguard(['simulate', '--scenario', path, '--json', '--allow-large'], 1_000);
    expect(allowed.stderr).not.toMatch(/allow-large/);
    expect([0, 1]).toContain(allowed.code);
    if (allowed.code === 1) expect(allowed.stderr).toMatch(/interrupted/);
  });

  it('writes a progress line at most every 10 s of the injected clock, with the time elapsed', () => {
    const clock = new FakeClock(0);
    let stderr = '';
    const report = lineProgress(
      { stdout: { write: () => true }, stderr: { write: (t: string) => (stderr += t) } },
      clock,
    );
    report('a');
    clock.advance(9_999);
    report('b');
    clock.advance(1);
    report('c');
    clock.advance(5_000);
    report('d');
    clock.advance(65_000);
    report('e');
    expect(stderr).toBe('c (10s elapsed)\ne (1m 20s elapsed)\n');
  });
});
