import { DEFAULT_PREFIX, dependencyOfKey, dependencyTag, encodeKeyPart } from '../common/keys.js';
import { assertPrefix } from '../common/names.js';
import { escapeGlob } from './scan.js';

// The Redis stores' names for the shared key scheme (src/common/keys.ts); re-exported for their importers.
export { assertPrefix, DEFAULT_PREFIX };

const BUDGET = ':budget';

/**
 * The key holding a dependency's budget: `{<prefix>:d:<dependency>}:budget`, prefix and dependency
 * encoded (src/common/keys.ts). The braces make the whole encoded (prefix, dependency) the hash tag, so
 * everything a dependency owns lives in one Redis Cluster slot, and no two (prefix, dependency) pairs share
 * a key.
 *
 * @example
 * budgetKey('stormguard', 'search'); // '{stormguard:d:search}:budget'
 * budgetKey('shop', 'eu:search'); // '{shop:d:eu%3Asearch}:budget'
 */
export function budgetKey(prefix: string, dependency: string): string {
  return `${dependencyTag(prefix, dependency)}${BUDGET}`;
}

/**
 * The SCAN pattern matching every key `{<prefix>:d:*}<suffix>` under `prefix` (glob characters of the
 * encoded prefix matched literally).
 *
 * @example
 * dependencyKeyPattern('shop', ':budget'); // '{shop:d:*}:budget'
 */
export function dependencyKeyPattern(prefix: string, suffix: string): string {
  return `{${escapeGlob(encodeKeyPart(prefix))}:d:*}${suffix}`;
}

/** The SCAN pattern matching every budget key under `prefix`. */
export function budgetKeyPattern(prefix: string): string {
  return dependencyKeyPattern(prefix, BUDGET);
}

/** The dependency a budget key belongs to (decoded), or `undefined` for a key that is not one. */
export function dependencyOfBudgetKey(prefix: string, key: string): string | undefined {
  return dependencyOfKey(prefix, BUDGET, key);
}
