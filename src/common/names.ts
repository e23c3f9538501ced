import { InvalidInputError } from '../errors/invalid-input-error.js';

/**
 * Longest dependency name accepted, in UTF-16 code units: it appears in store keys, metric labels and CLI
 * tables. Longer names are refused; everything else is accepted and encoded where a store needs it.
 *
 * @example
 * 'x'.repeat(MAX_DEPENDENCY_LENGTH).length; // 200, the longest name accepted
 */
export const MAX_DEPENDENCY_LENGTH = 200;

/**
 * Longest key prefix accepted, in UTF-16 code units.
 *
 * @example
 * 'x'.repeat(MAX_PREFIX_LENGTH).length; // 64, the longest prefix accepted
 */
export const MAX_PREFIX_LENGTH = 64;

/**
 * Why `name` cannot be a dependency name, or `undefined` when it can. The one rule for every store: a
 * non-empty string of at most 200 characters. Any character is allowed (unmapped job names become
 * dependencies, and BullMQ allows any job name): stores encode names into keys with `encodeKeyPart`.
 *
 * @example
 * dependencyNameProblem('search'); // undefined
 * dependencyNameProblem('send email'); // undefined (encoded as send%20email in keys)
 * dependencyNameProblem(''); // 'must not be empty'
 */
export function dependencyNameProblem(name: unknown): string | undefined {
  return nameProblem(name, MAX_DEPENDENCY_LENGTH);
}

/**
 * Throws an {@link InvalidInputError} naming the dependency and the rule it breaks.
 *
 * @example
 * assertDependencyName('search'); // ok
 * assertDependencyName(''); // throws: dependency "": must not be empty ...
 */
export function assertDependencyName(name: unknown): asserts name is string {
  const problem = dependencyNameProblem(name);
  if (problem)
    throw new InvalidInputError(
      `dependency ${JSON.stringify(name)}: ${problem}; name the downstream system, e.g. "search"`,
    );
}

/**
 * Why `prefix` cannot be a key prefix, or `undefined`: a non-empty string of at most 64 characters, any
 * characters (they are encoded into keys, so `shop:eu` and `shop` never share a key).
 *
 * @example
 * prefixProblem('stormguard'); // undefined
 * prefixProblem(''); // 'must not be empty'
 */
export function prefixProblem(prefix: unknown): string | undefined {
  return nameProblem(prefix, MAX_PREFIX_LENGTH);
}

/**
 * Throws an {@link InvalidInputError} unless `prefix` is a valid key prefix (see {@link prefixProblem}).
 *
 * @example
 * assertPrefix('stormguard'); // ok
 * assertPrefix(''); // throws: prefix "": must not be empty ...
 */
export function assertPrefix(prefix: unknown): asserts prefix is string {
  const problem = prefixProblem(prefix);
  if (problem)
    throw new InvalidInputError(
      `prefix ${JSON.stringify(prefix)}: ${problem}; name the application, e.g. "stormguard" (the default)`,
    );
}

function nameProblem(name: unknown, maxLength: number): string | undefined {
  if (typeof name !== 'string') return `must be a string, got ${name === null ? 'null' : typeof name}`;
  if (name.length === 0) return 'must not be empty';
  if (name.length > maxLength) return `must be at most ${maxLength} characters, got ${name.length}`;
  return undefined;
}
