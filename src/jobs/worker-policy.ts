import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { RetryPolicy } from '../policy/types.js';

/**
 * The policy a worker runs: the object it was given (built by `definePolicy` or a preset, so already
 * validated), or the preset a name refers to.
 *
 * @example
 * resolveWorkerPolicy(definePolicy({ maxAttempts: 5, backoff: { type: 'exponential', baseMs: '2s', maxDelayMs: '10m' } }));
 */
export function resolveWorkerPolicy(policy: RetryPolicy | string): RetryPolicy {
  if (typeof policy === 'object' && policy !== null && Number.isInteger(policy.maxAttempts) && policy.backoff)
    return policy;
  throw new InvalidInputError(
    `createWorker: policy must be a policy built with definePolicy or a preset, got ${JSON.stringify(policy)}`,
  );
}
