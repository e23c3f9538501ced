import { createHash } from 'node:crypto';
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
 * Why `name` cannot be a dependency name, or `undefined` when it can. The one rule for every part (budget,
 * breaker, flow control, limits) and every store (memory, Redis, Cluster, PostgreSQL): a non-empty string
 * of at most 200 characters that every store can hold as it is, so no U+0000 (PostgreSQL's text refuses
 * it) and no lone surrogate (it has no UTF-8 form: PostgreSQL would store U+FFFD, and two names would
 * meet). Anything else is allowed, spaces alone included: stores encode names into keys with
 * `encodeKeyPart`. A job name that breaks the rule and becomes its own dependency is mapped first (see
 * `JobRuntime.dependencyFor`).
 *
 * @example
 * dependencyNameProblem('search'); // undefined
 * dependencyNameProblem('send email'); // undefined (encoded as send%20email in keys)
 * dependencyNameProblem(' '); // undefined
 * dependencyNameProblem(''); // 'must not be empty'
 */
export function dependencyNameProblem(name: unknown): string | undefined {
  const problem = nameProblem(name, MAX_DEPENDENCY_LENGTH);
  if (problem !== undefined || typeof name !== 'string') return problem;
  if (name.includes('\u0000')) return 'must not contain U+0000 (PostgreSQL cannot store it)';
  if (LONE_SURROGATE.test(name)) return 'must be well-formed Unicode (it holds a lone surrogate)';
  return undefined;
}

const LONE_SURROGATE = /\p{Cs}/u;

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

// What a mapped job name ends with: `~` and 32 hex digits of a hash of the whole name.
const HASH_HEX = 32;
const MAPPED = new RegExp(`~[0-9a-f]{${HASH_HEX}}$`);
const READABLE_LENGTH = MAX_DEPENDENCY_LENGTH - 1 - HASH_HEX;

/**
 * The dependency a job with no mapping stands for: its own name when that is a dependency name (see
 * {@link dependencyNameProblem}), else the name mapped losslessly: a readable part of it (at most 167
 * characters, U+0000 dropped, a lone surrogate shown as U+FFFD, `unnamed` when nothing is left) then `~`
 * and 32 hex digits of the SHA-256 of the whole name (its UTF-16 code units, so lone surrogates count). A
 * name that already ends like a mapped one is mapped too, so no job name can take another's dependency:
 * two different names never share one (short of a 128-bit hash collision), and every worker maps a name
 * the same way.
 *
 * @example
 * jobDependencyName('index_document'); // 'index_document'
 * jobDependencyName(' '); // ' ' (spaces are a name)
 * jobDependencyName(''); // 'unnamed~' followed by 32 hex digits
 * jobDependencyName('x'.repeat(300)).length; // 200: 167 x, '~', 32 hex digits
 */
export function jobDependencyName(name: string): string {
  if (dependencyNameProblem(name) === undefined && !MAPPED.test(name)) return name;
  const hash = createHash('sha256').update(Buffer.from(name, 'utf16le')).digest('hex').slice(0, HASH_HEX);
  let readable = name.replaceAll('\u0000', '').replace(LONE_SURROGATES, '\uFFFD').slice(0, READABLE_LENGTH);
  // Never end on half of a surrogate pair the cut split.
  if (/[\uD800-\uDBFF]$/.test(readable)) readable = readable.slice(0, -1);
  return `${readable || 'unnamed'}~${hash}`;
}

const LONE_SURROGATES = /\p{Cs}/gu;
