import { InvalidInputError } from '../errors/invalid-input-error.js';

/** Longest dependency name accepted: it appears in Redis keys, metric labels and CLI tables. */
export const MAX_DEPENDENCY_LENGTH = 200;

// Braces would move a Redis Cluster hash tag; control characters and whitespace garble logs and tables.
const FORBIDDEN = /[{}\s\p{Cc}]/u;

/**
 * Why `name` cannot be a dependency name, or `undefined` when it can: non-empty, at most 200 characters,
 * no braces (they decide Redis Cluster hash slots), no whitespace or control characters.
 *
 * @example
 * dependencyNameProblem('search'); // undefined
 * dependencyNameProblem(''); // 'must not be empty'
 */
export function dependencyNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string') return `must be a string, got ${typeof name}`;
  if (name.length === 0) return 'must not be empty';
  if (name.length > MAX_DEPENDENCY_LENGTH) return `must be at most ${MAX_DEPENDENCY_LENGTH} characters`;
  if (FORBIDDEN.test(name)) return 'must not contain braces, whitespace or control characters';
  return undefined;
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
