/**
 * stormguard/config: reading policy config files (.json, .yaml/.yml, .js/.mjs/.cjs, .ts) and linting them.
 * Kept apart from the root so `import 'stormguard'` loads no YAML parser.
 *
 * @example
 * import { loadPolicies } from 'stormguard/config';
 * const { policies } = await loadPolicies('stormguard.config.yaml');
 */
export { type LintFinding, type LintReport, type LintSeverity, lintConfig } from './lint-config.js';
export { loadPolicies } from './load-policies.js';
export {
  type ConfigShape,
  type PolicyConfig,
  type PolicyConfigInput,
  type PolicyEntry,
  parseConfigShape,
  resolvePolicyEntry,
} from './policy-config.js';
export { readConfigFile } from './read-config-file.js';
