import { readFile } from 'node:fs/promises';

/**
 * A commented YAML scenario to start from (what `stormguard simulate --example` prints). It loads and runs
 * as it is.
 *
 * @example
 * await writeFile('my-scenario.yaml', await exampleScenarioText());
 */
export function exampleScenarioText(): Promise<string> {
  return readFile(new URL('./example.yaml', import.meta.url), 'utf8');
}
