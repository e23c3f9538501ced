import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatSummary } from '../../src/sim/format/summary.js';
import { reportData } from '../../src/sim/report/data.js';
import { renderReport } from '../../src/sim/report/html.js';
import type { SimulationResult, StrategyResult } from '../../src/sim/results.js';
import { summarize } from '../../src/sim/results.js';
import { exampleScenarioText } from '../../src/sim/scenario/example.js';
import { parseScenario, parseScenarioText } from '../../src/sim/scenario/load.js';
import type { Scenario } from '../../src/sim/scenario/schema.js';
import { simulate } from '../../src/sim/simulate.js';
import { launchChromium } from '../helpers/chromium.js';
import { cli, ensureCliBuilt } from '../helpers/cli.js';
import { inkedCanvases, openReport } from '../helpers/report-page.js';
import { STRATEGY_JSON_FIELDS } from './json-shape.js';

const API = 'partner-api';
const byName = (r: SimulationResult, name: string) => r.strategies.find((s) => s.name === name)!;
const rateLimited = (s: StrategyResult) => s.requests[API]!.rateLimited!;

/** The rate-limited-api example as shipped, with `edit` applied to the validated scenario. */
async function example(edit: (s: Scenario) => void = () => {}): Promise<Scenario> {
  const scenario = parseScenarioText(await exampleScenarioText('rate-limited-api'), 'rate-limited-api.yaml');
  edit(scenario);
  return scenario;
}

/*
 * The example, by hand: 15 000 jobs queued at 0, 80 slots, calls of 100 to 300 ms (200 ms ± 50 %), an API
 * that answers 50 calls in each second of the clock and 429 (Retry-After 5 s) to the rest, no other error.
 *
 * - With limits (maxRatePerSecond 50, the API's rate): the pacer starts one call every 1 000 / 50 = 20 ms
 *   from 0, so every second of the clock holds exactly 50 starts and no call is beyond the API's rate: 0
 *   429s, 0 retries, every job completes on its first attempt. The last of the 15 000 starts at
 *   14 999 × 20 ms = 299.98 s and answers 100 to 300 ms later: the run drains between 300.08 s and
 *   300.28 s, so throughput is 15 000 / 300.28 ≥ 49.95 to 15 000 / 300.08 ≤ 49.99 jobs a second. Tolerance:
 *   the API's 50/s within 0.1 %, [49.95, 50].
 * - Without limits: while the backlog lasts, each of the 80 slots is busy and makes at least 1 / 0.3 s =
 *   3.3 calls a second, 266 a second for the fleet, of which the API answers at most 50. The backlog cannot
 *   be emptied by first attempts in less than 15 000 / (80 × 10 calls/s) = 18.75 s, so the first 18 s alone
 *   bring at least (266 - 50) × 18 = 3 888 429s: more than 3 000 is the bound.
 */
describe('the rate-limited API, with limits and without', () => {
  let result: SimulationResult;
  beforeAll(async () => {
    result = await simulate(await example());
  }, 60_000);

  it('with limits: no 429, no retry, every job completes, at the API rate', () => {
    const limits = byName(result, 'budget-and-limits');
    expect(rateLimited(limits)).toBe(0);
    expect(limits.requests[API]!.retries).toBe(0);
    expect(limits.completed).toBe(15_000);
    expect(limits.drainMs).toBeGreaterThanOrEqual(300_080);
    expect(limits.drainMs).toBeLessThanOrEqual(300_280);
    expect(limits.throughputPerSecond).toBeGreaterThanOrEqual(49.95);
    expect(limits.throughputPerSecond).toBeLessThanOrEqual(50);
    // No second of the clock starts more calls than the API answers.
    const timeline = limits.timeline[API]!;
    const starts = timeline.first.map((n, i) => n + (timeline.retries[i] ?? 0));
    expect(Math.max(...starts)).toBe(50);
  });

  it('without limits: the 429s are many, for a ceiling alone and for the fleet budget', () => {
    for (const name of ['ceiling-only', 'fleet-budget']) {
      const s = byName(result, name);
      expect(rateLimited(s), name).toBeGreaterThan(3_000);
      // Each 429 is a failed attempt: the API fails nothing else (its error rate is 0), so the
      // dependency's failures, second by second, add up to the 429s.
      expect(
        s.timeline[API]!.failures.reduce((a, b) => a + b, 0),
        name,
      ).toBe(rateLimited(s));
    }
  });

  it('the summary, the --json document and the report data show the 429s and the throughput', () => {
    const text = formatSummary(result);
    expect(text).toContain(`${API}: up throughout; 429 above 50/s (Retry-After 5 s); limits 50/s`);
    expect(text).toMatch(/^partner-api: rate-limited answers \(429\)\s+[\d,]+\s+[\d,]+\s+[\d,]+\s+0$/m);
    expect(text).toMatch(/^throughput \(completed\/s\)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+50\.0$/m);
    const json = summarize(result);
    for (const s of json.strategies) {
      expect(Object.keys(s)).toEqual([...STRATEGY_JSON_FIELDS, 'throughputPerSecond']);
      expect(Object.keys(s.requests[API]!)).toEqual([
        'first',
        'retries',
        'retriesWhileDown',
        'recoveryPeakPerSecond',
        'rateLimited',
      ]);
    }
    const data = reportData(result);
    expect(data.dependencies[0]?.rateLimit).toEqual({ perSecond: 50, retryAfterSeconds: 5 });
    const ceiling = data.strategies.find((s) => s.label === 'ceiling only')!;
    expect(ceiling.rateLimited?.[API]?.some((v) => v > 0)).toBe(true);
    expect(data.strategies.every((s) => s.throughputPerSecond !== undefined)).toBe(true);
  });
});

// A missing browser fails the run: the charts are only known to render if they were rendered.
describe('the report of the rate-limited API renders in headless Chromium', () => {
  const artifacts = fileURLToPath(new URL('../../artifacts/', import.meta.url));
  const reportPath = `${artifacts}sim-report-rate-limited.html`;
  let browser: Browser;
  beforeAll(async () => {
    mkdirSync(artifacts, { recursive: true });
    writeFileSync(reportPath, await renderReport(await simulate(await example())));
    browser = await launchChromium('to check the HTML report');
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('draws the successes against the rate, the 429s and the throughput, without a console error', async () => {
    const { context, page, errors } = await openReport(browser, reportPath);
    // Coloured pixels (series, bars, legend marks) in each canvas of the section.
    const coloured = (await inkedCanvases(page, '#limited canvas')).map((canvas) => canvas.coloured);
    // Successes against the rate, 429s, throughput.
    expect(coloured.length).toBe(3);
    for (const n of coloured) expect(n).toBeGreaterThan(1_000);
    // Load, 4 × first attempts vs retries, budget, queue, the three above, dead letters.
    expect(await page.locator('canvas').count()).toBe(11);
    expect(await page.locator('#summary').textContent()).toMatch(/^throughput \(completed\/s\)/m);
    await page.screenshot({ path: `${artifacts}sim-report-rate-limited.png`, fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);
});

describe('Retry-After holds the whole dependency', () => {
  /*
   * Limits above the API's rate (60/s against 50/s): the 51st call of a second is answered 429. A call
   * that starts in second s answers by s + 1.3 s at the latest, and its Retry-After (5 s, under metered-api's
   * retryAfter.maxMs of 10 minutes) holds every call until at least its answer + 5 s, so at least from
   * s + 1.3 s to s + 5 s: seconds s + 2, s + 3 and s + 4 start no call at all.
   */
  it('no call starts for the Retry-After after a 429, then the fleet probes and ramps back', async () => {
    const scenario = await example((s) => {
      s.dependencies[API]!.limits = { maxRatePerSecond: 60 };
      s.strategies = ['budget-and-limits'];
    });
    const limits = (await simulate(scenario)).strategies[0]!;
    const timeline = limits.timeline[API]!;
    const starts = timeline.first.map((n, i) => n + (timeline.retries[i] ?? 0));
    const seconds = timeline.rateLimited!.flatMap((n, s) => (n > 0 ? [s] : []));
    expect(seconds.length).toBeGreaterThan(0);
    for (const s of seconds)
      expect(starts.slice(s + 2, s + 5), `after the 429s of second ${s}`).toEqual([0, 0, 0]);
    expect(limits.completed + Object.values(limits.deadLettered).reduce((a, b) => a + b, 0)).toBe(15_000);
  }, 60_000);

  /*
   * The policy waits for a Retry-After of at most 1 s and dead-letters a longer one; the API answers
   * Retry-After: 5. A worker with limits on the API waits for it all the same (the limits hold the whole
   * dependency): no job is dead-lettered for its length. Without limits the policy applies: the fleet
   * budget dead-letters every job whose call is answered 429 (each 429 is a Retry-After past the cap), and
   * the first second alone answers more than 50 of its calls 429.
   */
  it('a Retry-After past the policy cap is waited for with limits, as a worker waits, and dead-lettered without', async () => {
    const scenario = await example((s) => {
      s.dependencies[API]!.limits = { maxRatePerSecond: 60 };
      s.arrivals[0]!.backlog = 3_000;
      const jobClass = s.jobClasses['sync-contact']!;
      jobClass.policy = { ...jobClass.policy, retryAfter: { maxMs: 1_000, onExceeded: 'dead-letter' } };
      s.strategies = ['fleet-budget', 'budget-and-limits'];
    });
    const result = await simulate(scenario);
    const tooLong = (name: string) => byName(result, name).deadLettered['retry-after-too-long'] ?? 0;
    expect(rateLimited(byName(result, 'budget-and-limits'))).toBeGreaterThan(0);
    expect(tooLong('budget-and-limits')).toBe(0);
    expect(tooLong('fleet-budget')).toBeGreaterThan(50);
  }, 60_000);
});

describe('rate limits and limits in a scenario are validated', () => {
  const base = {
    workers: { count: 1 },
    jobClasses: { sync: { dependency: 'api', policy: { maxAttempts: 2 } } },
    arrivals: [{ class: 'sync', backlog: 1 }],
  };
  const refusal = (dependency: Record<string, unknown>): string => {
    try {
      parseScenario({ ...base, dependencies: { api: dependency } });
    } catch (error) {
      return (error as Error).message;
    }
    return 'accepted';
  };

  it.each([
    [{ rateLimit: { perSecond: 0 } }, 'dependencies.api.rateLimit.perSecond: 0 is invalid: must be >= 1'],
    [
      { rateLimit: { perSecond: 2.5 } },
      'dependencies.api.rateLimit.perSecond: 2.5 is invalid: must be a whole',
    ],
    [
      { rateLimit: { perSecond: 5, retryAfterSeconds: 0.5 } },
      'dependencies.api.rateLimit.retryAfterSeconds: 0.5 is invalid: must be a whole number of seconds',
    ],
    [
      { limits: { maxInFlight: 0 } },
      'dependencies.api.limits.maxInFlight: 0 is invalid: must be a whole number >= 1 (pause the dependency to stop every call)',
    ],
    [
      { limits: { maxRatePerSecond: -1 } },
      'dependencies.api.limits.maxRatePerSecond: -1 is invalid: must be a finite number > 0',
    ],
    [{ limits: { maxInflight: 3 } }, 'dependencies.api.limits'],
  ])('refuses %j', (dependency, message) => {
    expect(refusal(dependency)).toContain(message);
  });

  it('accepts them, with Retry-After 1 s by default, and the budget-and-limits strategy', () => {
    const scenario = parseScenario({
      ...base,
      dependencies: {
        api: { rateLimit: { perSecond: 5 }, limits: { maxInFlight: 2, maxRatePerSecond: 4.5 } },
      },
      strategies: ['budget-and-limits'],
    });
    expect(scenario.dependencies.api?.rateLimit).toEqual({ perSecond: 5, retryAfterSeconds: 1 });
    expect(scenario.dependencies.api?.limits).toEqual({ maxInFlight: 2, maxRatePerSecond: 4.5 });
  });
});

describe('stormguard simulate --example rate-limited-api (built binary)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'stormguard-sim-rate-limited-'));
  beforeAll(() => ensureCliBuilt('simulate'), 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints the scenario, which runs as printed; an unknown example is refused with exit code 2', async () => {
    const example = await cli('simulate', '--example', 'rate-limited-api');
    expect(example.code).toBe(0);
    expect(example.stdout).toBe(await exampleScenarioText('rate-limited-api'));
    const file = join(dir, 'api.yaml');
    writeFileSync(file, example.stdout);
    const run = await cli(
      'simulate',
      '--scenario',
      file,
      '--strategies',
      'ceiling-only,budget-and-limits',
      '--json',
    );
    expect(run.code).toBe(0);
    const [ceiling, limits] = JSON.parse(run.stdout).strategies;
    expect(ceiling.requests[API].rateLimited).toBeGreaterThan(3_000);
    expect(limits.requests[API].rateLimited).toBe(0);
    expect(limits.throughputPerSecond).toBeGreaterThanOrEqual(49.95);
    const unknown = await cli('simulate', '--example', 'nope');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      'stormguard: --example: "nope" is not an example scenario; use one of: checkout-mail-outage, rate-limited-api\n',
    );
  }, 60_000);
});
