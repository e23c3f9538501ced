import { describe, expect, it } from 'vitest';
import { isValidationError } from '../../src/errors/validation-error.js';
import { getPreset } from '../../src/policy/presets.js';
import { DEFAULT_SCENARIO } from '../../src/sim/scenario/default.js';
import { exampleScenarioText } from '../../src/sim/scenario/example.js';
import { compileJobClasses, parseScenario, parseScenarioText } from '../../src/sim/scenario/load.js';
import { resolveStrategies } from '../../src/sim/strategies.js';

// biome-ignore lint/suspicious/noExplicitAny: the tests reach into arbitrary nested fields to break them
type Editable = Record<string, any>;

/** The default scenario with one change applied by `edit`. */
function variant(edit: (s: Editable) => void): Record<string, unknown> {
  const s = structuredClone(DEFAULT_SCENARIO) as Editable;
  edit(s);
  return s;
}

function errorOf(input: unknown): Error {
  try {
    parseScenario(input);
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the scenario to be refused');
}

describe('scenario validation', () => {
  it('accepts the default scenario, durations written as strings', () => {
    const scenario = parseScenario(structuredClone(DEFAULT_SCENARIO));
    expect(scenario.budget).toEqual({
      ratio: 0.2,
      windowMs: 60_000,
      minAllowance: 10,
      mode: 'enforce',
      onExhausted: 'dead-letter',
    });
    expect(scenario.dependencies.search?.timeline[0]).toMatchObject({
      from: 5_000,
      until: 605_000,
      state: 'down',
    });
    expect(scenario.jobClasses['index-document']?.policy.backoff).toEqual({
      type: 'exponential',
      baseMs: 2_000,
      factor: 2,
      maxDelayMs: 300_000,
    });
  });

  it.each([
    ['workers.concurrency', (s: Editable) => (s.workers.concurrency = 0), 'must be >= 1'],
    [
      'jobClasses.index-document.policy.maxAttempts',
      (s: Editable) => (s.jobClasses['index-document'].policy.maxAttempts = 'lots'),
      '',
    ],
    [
      'dependencies.search.timeline.0.until',
      (s: Editable) => (s.dependencies.search.timeline[0].until = '1s'),
      'must end after it starts',
    ],
    ['dependencies.search.latency', (s: Editable) => (s.dependencies.search.latency = 'soon'), 'duration'],
    ['arrivals.0.class', (s: Editable) => (s.arrivals[0].class = 'index-documents'), 'is not a job class'],
    [
      'jobClasses.index-document.dependency',
      (s: Editable) => (s.jobClasses['index-document'].dependency = 'serch'),
      'names no dependency',
    ],
    ['budget.ratio', (s: Editable) => (s.budget.ratio = 1.5), 'must be > 0 and <= 1'],
    ['budget.windowMs', (s: Editable) => (s.budget.windowMs = 65), 'multiple'],
    ['strategies.0', (s: Editable) => (s.strategies = ['ceiling-first']), 'must be one of'],
  ])('a bad %s is refused with an error naming it', (field, edit, rule) => {
    const error = errorOf(variant(edit));
    expect(isValidationError(error)).toBe(true);
    expect(error.message).toContain(`${field}:`);
    expect(error.message).toContain(rule);
  });

  it('starts a job class from a preset, its policy fields overriding it', () => {
    const scenario = parseScenario(
      variant((s) => {
        s.jobClasses['index-document'] = {
          dependency: 'search',
          preset: 'metered-api',
          policy: { maxAttempts: 2 },
        };
      }),
    );
    const [jobClass] = compileJobClasses(scenario);
    expect(jobClass?.policy).toMatchObject({ ...getPreset('meteredApi'), maxAttempts: 2 });
    const error = errorOf(variant((s) => (s.jobClasses['index-document'].preset = 'metered')));
    expect(error.message).toContain(
      'jobClasses.index-document.preset: "metered" is invalid: is not a preset; use one of:',
    );
  });

  it('names an unknown field (a typo must not fall back to a default)', () => {
    const error = errorOf(variant((s) => (s.workers.concurency = 4)));
    expect(error.message).toContain('workers');
    expect(error.message).toContain('concurency');
  });

  it('refuses impossible scenarios: no workers, no workers section, overlapping phases', () => {
    expect(errorOf(variant((s) => (s.workers.count = 0))).message).toMatch(
      /workers\.count: 0 is invalid: must be >= 1/,
    );
    expect(errorOf(variant((s) => delete s.workers)).message).toContain('workers:');
    const overlapping = variant((s) =>
      s.dependencies.search.timeline.push({ from: '1m', until: '2m', state: 'up' }),
    );
    expect(errorOf(overlapping).message).toContain('dependencies.search.timeline: ');
  });

  it('reads YAML and JSON text, and reports unparseable text with its line', () => {
    const fromJson = parseScenarioText(JSON.stringify(DEFAULT_SCENARIO), 'outage.json');
    expect(fromJson.name).toBe('search-cluster-outage');
    expect(() => parseScenarioText('workers: [1, 2\nname: x', 'broken.yaml')).toThrow(
      /broken\.yaml: not valid YAML or JSON at line \d/,
    );
    expect(() => parseScenarioText('- just a list', 'list.yaml')).toThrow(/must be a mapping/);
  });

  it('the example prints as commented YAML and loads as it is', async () => {
    const text = await exampleScenarioText();
    expect(text.split('\n').filter((l) => l.trimStart().startsWith('#')).length).toBeGreaterThan(5);
    const scenario = parseScenarioText(text, 'example.yaml');
    expect(resolveStrategies(scenario).map((s) => s.name)).toEqual([
      'ceiling-only',
      'fleet-budget',
      'per-worker-budgets',
      'deferring-budget',
      'budget-and-breaker',
      'flow-control',
    ]);
  });

  it('flow control holds work back instead of dead-lettering it: a budget denial defers, one probe per half-open period, unless its entry says otherwise', () => {
    const scenario = parseScenario({
      ...structuredClone(DEFAULT_SCENARIO),
      strategies: [
        'flow-control',
        {
          name: 'strict',
          kind: 'flow-control',
          budget: { onExhausted: 'dead-letter' },
          breaker: { halfOpenProbes: 2 },
          flowControl: { slowStartMs: '2m' },
        },
      ],
    });
    const [builtIn, strict] = resolveStrategies(scenario);
    expect(builtIn).toMatchObject({
      label: 'flow control',
      budget: { onExhausted: 'defer' },
      breaker: { halfOpenProbes: 1 },
    });
    expect(builtIn!.flowControl).toEqual({
      slowStartMs: 30_000,
      floorPerSecond: 1,
      maxPaceWaitMs: 1_000,
      probeWaitMs: 1_000,
      releaseIntervalMs: 250,
      releaseBatch: 100,
    });
    expect(strict).toMatchObject({
      budget: { onExhausted: 'dead-letter' },
      breaker: { halfOpenProbes: 2 },
      flowControl: { slowStartMs: 120_000 },
    });
    expect(() =>
      parseScenario({ ...structuredClone(DEFAULT_SCENARIO), flowControl: { floorPerSecond: 0 } }),
    ).toThrow(/flowControl\.floorPerSecond: 0 is invalid: must be > 0/);
  });

  it('--strategies narrows the run and names what exists when a name is unknown', () => {
    const scenario = parseScenario(structuredClone(DEFAULT_SCENARIO));
    expect(resolveStrategies(scenario, ['fleet-budget']).map((s) => s.label)).toEqual([
      'ceiling + fleet budget',
    ]);
    expect(() => resolveStrategies(scenario, ['fleet'])).toThrow(
      /"fleet" is not a strategy.*ceiling-only, fleet-budget/,
    );
  });
});
