import { InvalidInputError } from '../errors/invalid-input-error.js';

/**
 * The default key prefix of every stormguard Redis key.
 *
 * @example
 * budgetKey(DEFAULT_PREFIX, 'search'); // '{stormguard:search}:budget'
 */
export const DEFAULT_PREFIX = 'stormguard';

// Braces would move the hash tag (and split a dependency's keys over Redis Cluster slots); glob characters
// would make `budget status`'s SCAN pattern match other keys.
const PREFIX = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * Throws an {@link InvalidInputError} unless `prefix` is 1–64 letters, digits, `_`, `-`, `.` or `:`.
 *
 * @example
 * assertPrefix('stormguard'); // ok
 * assertPrefix('a{b}'); // throws
 */
export function assertPrefix(prefix: unknown): asserts prefix is string {
  if (typeof prefix !== 'string' || !PREFIX.test(prefix))
    throw new InvalidInputError(
      `prefix ${JSON.stringify(prefix)}: use 1-64 letters, digits, '_', '-', '.' or ':' ` +
        '(braces split a dependency over Redis Cluster hash slots; glob characters break key scans)',
    );
}

const SUFFIX = '}:budget';

/**
 * The key holding a dependency's budget: `{<prefix>:<dependency>}:budget`. The braces make the whole
 * `<prefix>:<dependency>` the hash tag, so everything a dependency owns lives in one Redis Cluster slot.
 *
 * @example
 * budgetKey('stormguard', 'search'); // '{stormguard:search}:budget'
 */
export function budgetKey(prefix: string, dependency: string): string {
  return `{${prefix}:${dependency}${SUFFIX}`;
}

/** The SCAN pattern matching every budget key under `prefix`. */
export function budgetKeyPattern(prefix: string): string {
  return `{${prefix}:*${SUFFIX}`;
}

/** The dependency a budget key belongs to, or `undefined` for a key that is not one. */
export function dependencyOfBudgetKey(prefix: string, key: string): string | undefined {
  const head = `{${prefix}:`;
  if (!key.startsWith(head) || !key.endsWith(SUFFIX) || key.length <= head.length + SUFFIX.length)
    return undefined;
  return key.slice(head.length, -SUFFIX.length);
}
