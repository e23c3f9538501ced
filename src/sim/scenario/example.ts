import { readFile } from 'node:fs/promises';
import { InvalidInputError } from '../../errors/invalid-input-error.js';

/**
 * The example scenarios `stormguard simulate --example [name]` prints, by name: `checkout-mail-outage`
 * (the default: receipts and CRM syncs while the mail provider is down) and `rate-limited-api` (a backlog
 * against an API that answers 429 with Retry-After above 50 calls a second, with and without limits).
 */
export const EXAMPLE_SCENARIOS = {
  'checkout-mail-outage': 'example.yaml',
  'rate-limited-api': 'rate-limited-api.yaml',
} as const;

/** The name of an example scenario. */
export type ExampleScenario = keyof typeof EXAMPLE_SCENARIOS;

/**
 * A commented YAML scenario to start from (what `stormguard simulate --example [name]` prints). It loads
 * and runs as it is. Throws {@link InvalidInputError} for a name that is not an example.
 *
 * @example
 * await writeFile('my-scenario.yaml', await exampleScenarioText());
 * await writeFile('api.yaml', await exampleScenarioText('rate-limited-api'));
 */
export function exampleScenarioText(name: string = 'checkout-mail-outage'): Promise<string> {
  const file = Object.hasOwn(EXAMPLE_SCENARIOS, name)
    ? EXAMPLE_SCENARIOS[name as ExampleScenario]
    : undefined;
  if (file === undefined)
    return Promise.reject(
      new InvalidInputError(
        `--example: "${name}" is not an example scenario; use one of: ${Object.keys(EXAMPLE_SCENARIOS).join(', ')}`,
      ),
    );
  return readFile(new URL(`./${file}`, import.meta.url), 'utf8');
}
