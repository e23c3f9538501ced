import { readFile } from 'node:fs/promises';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { FakeClock } from '../../common/clock.js';
import { firstLineOf } from '../../common/error-text.js';
import { parseWith } from '../../common/validation.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import { definePolicy } from '../../policy/define-policy.js';
import type { EngineJobClass } from '../engine/context.js';
import { createRuntime, resolveStrategies } from '../strategies.js';
import { type Scenario, type ScenarioInput, ScenarioSchema } from './schema.js';

/**
 * Validates a scenario given as a plain object (what a JSON or YAML file holds) and fills its defaults.
 * Throws a `ValidationError` naming each bad field, e.g.
 * `invalid scenario: workers.count: 0 is invalid: must be >= 1: a fleet needs at least one worker`.
 *
 * @example
 * const scenario = parseScenario({ workers: { count: 4 }, jobClasses: { … }, arrivals: [ … ], dependencies: { … } });
 */
export function parseScenario(input: ScenarioInput | unknown): Scenario {
  const scenario = parseWith(ScenarioSchema, input, 'scenario');
  compileJobClasses(scenario);
  // Build each strategy's budget once, so settings the budget refuses are reported now, naming the field.
  for (const strategy of resolveStrategies(scenario)) createRuntime(strategy, 1, new FakeClock(0), scenario);
  return scenario;
}

/**
 * Parses scenario text, YAML or JSON (JSON is YAML), then validates it like {@link parseScenario}.
 * `origin` names the source in error messages (a file path).
 *
 * @example
 * const scenario = parseScenarioText(await readFile('outage.yaml', 'utf8'), 'outage.yaml');
 */
export function parseScenarioText(text: string, origin = 'scenario'): Scenario {
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos ? ` at line ${error.linePos[0].line}` : '';
    const why = firstLineOf(error);
    throw new InvalidInputError(`${origin}: not valid YAML or JSON${where}: ${why}`);
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    throw new InvalidInputError(
      `${origin}: a scenario must be a mapping of fields (workers, jobClasses, arrivals, …)`,
    );
  return parseScenario(data);
}

/**
 * Reads and validates a scenario file (`.yaml`, `.yml` or `.json`).
 *
 * @example
 * const scenario = await loadScenarioFile('scenarios/search-outage.yaml');
 */
export async function loadScenarioFile(path: string): Promise<Scenario> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InvalidInputError(
      `--scenario: cannot read ${path} (${code ?? String(error)}); give the path of a YAML or JSON scenario (stormguard simulate --example prints one)`,
    );
  }
  return parseScenarioText(text, path);
}

/**
 * The scenario's job classes as the engine runs them: each policy built by `definePolicy` (named after its
 * class unless it has a name), each dependency as an index into {@link dependencyNames}.
 */
export function compileJobClasses(scenario: Scenario): EngineJobClass[] {
  const dependencies = dependencyNames(scenario);
  return Object.entries(scenario.jobClasses).map(([className, jobClass]) => {
    const policy = definePolicy({
      ...jobClass.policy,
      name: jobClass.policy.name === 'policy' ? className : jobClass.policy.name,
    });
    return {
      policy,
      dependency: dependencies.indexOf(jobClass.dependency ?? className),
      permanentErrorRate: jobClass.permanentErrorRate,
      idempotencyKey: jobClass.idempotencyKey,
    };
  });
}

/** The scenario's dependencies, in the order they are defined. */
export function dependencyNames(scenario: Scenario): string[] {
  return Object.keys(scenario.dependencies);
}
