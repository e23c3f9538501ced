import { type PolicyConfig, parseConfigShape, resolvePolicyEntry } from './policy-config.js';
import { type ReadConfigOptions, readConfigFile } from './read-config-file.js';

/**
 * Loads and validates every policy in a config file (`.json`, `.yaml`/`.yml`, `.js`/`.mjs`/`.cjs`, or `.ts`
 * when tsx is installed). The file holds `{ policies: { name: policy | { preset, ...overrides } },
 * deadLetter?, idempotencyKeyTtlMs? }`. A .js, .mjs, .cjs or .ts file is executed to read it; pass
 * `{ execute: false }` for data formats only. Throws `InvalidInputError`/`ValidationError` naming the file, the
 * policy, the field and the rule.
 *
 * @example
 * const { policies } = await loadPolicies('stormguard.config.yaml');
 * await retry(() => mailer.send(message), policies.email);
 */
export async function loadPolicies(path: string, options: ReadConfigOptions = {}): Promise<PolicyConfig> {
  const shape = parseConfigShape(await readConfigFile(path, options), path);
  const policies: PolicyConfig['policies'] = {};
  for (const [key, entry] of Object.entries(shape.policies))
    policies[key] = resolvePolicyEntry(key, entry, shape);
  const config: PolicyConfig = { policies };
  if (shape.deadLetter !== undefined) config.deadLetter = shape.deadLetter;
  if (shape.idempotencyKeyTtlMs !== undefined) config.idempotencyKeyTtlMs = shape.idempotencyKeyTtlMs;
  return config;
}
