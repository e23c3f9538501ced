import { hashTagOf } from '../common/keys.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';

/**
 * BullMQ's key prefix when none is given.
 *
 * @example
 * clusterPrefixProblem(BULLMQ_DEFAULT_PREFIX, 'mail'); // names '{bull}' as a prefix that works
 */
export const BULLMQ_DEFAULT_PREFIX = 'bull';

/**
 * Why BullMQ cannot run queue `queue` under `prefix` on a Redis Cluster, or `undefined` when it can.
 *
 * BullMQ names a queue's keys `<prefix>:<queue>:<suffix>` (and its jobs `<prefix>:<queue>:<job id>`), and
 * its scripts touch several of them at once, so they must all hash to one slot: `<prefix>:<queue>` must
 * hold a complete, non-empty hash tag (`{bull}:mail`, `bull:{mail}`). Without one every script fails with
 * CROSSSLOT. The message names a prefix that works (`{<prefix>}`, `{bull}` for BullMQ's default).
 *
 * @example
 * clusterPrefixProblem('{bull}', 'mail'); // undefined
 * clusterPrefixProblem('bull', '{mail}'); // undefined
 * clusterPrefixProblem('bull', 'mail'); // 'BullMQ prefix "bull" with queue "mail" has no hash tag ...'
 */
export function clusterPrefixProblem(prefix: string, queue: string): string | undefined {
  const base = `${prefix}:${queue}`;
  // Tagged only if the tag closes inside `<prefix>:<queue>`: a brace left open would take its end from
  // the key's suffix or the job id, and spread the queue over many slots.
  if (hashTagOf(`${base}:`) === hashTagOf(`${base}:x`) && hashTagOf(`${base}:`) !== `${base}:`)
    return undefined;
  return (
    `BullMQ prefix ${JSON.stringify(prefix)} with queue ${JSON.stringify(queue)} has no hash tag, so the ` +
    `queue's keys spread over the cluster's slots and every BullMQ script fails with CROSSSLOT; use the ` +
    `prefix ${JSON.stringify(taggedPrefix(prefix))} (a hash tag in braces keeps each queue in one slot)`
  );
}

/**
 * Throws an {@link InvalidInputError} (see {@link clusterPrefixProblem}) unless BullMQ can run `queue`
 * under `prefix` on a Redis Cluster. Call it only when the connection is a Cluster: a single Redis takes
 * any prefix.
 *
 * @example
 * assertClusterPrefix('{bull}', 'mail'); // ok
 * assertClusterPrefix('bull', 'mail'); // throws: ... use the prefix "{bull}" ...
 */
export function assertClusterPrefix(prefix: string, queue: string): void {
  const problem = clusterPrefixProblem(prefix, queue);
  if (problem) throw new InvalidInputError(problem);
}

/** `prefix` wrapped in braces, without braces of its own (which would end the tag early). */
function taggedPrefix(prefix: string): string {
  const bare = prefix.replace(/[{}]/g, '');
  return `{${bare.length > 0 ? bare : BULLMQ_DEFAULT_PREFIX}}`;
}
