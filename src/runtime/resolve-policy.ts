import { InvalidInputError } from '../errors/invalid-input-error.js';
import { getPreset } from '../policy/presets.js';
import type { RetryPolicy } from '../policy/types.js';

/**
 * The policy a worker runs: the object it was given (built by `definePolicy` or a preset, so already
 * validated), or the preset a name refers to (`'idempotentInternal'` or `'idempotent-internal'`).
 *
 * @example
 * resolveWorkerPolicy('email').maxAttempts; // 8
 * resolveWorkerPolicy(presets.payment).name; // "payment"
 */
export function resolveWorkerPolicy(policy: RetryPolicy | string, who = 'createWorker'): RetryPolicy {
  if (typeof policy === 'string') return getPreset(policy);
  if (typeof policy === 'object' && policy !== null && Number.isInteger(policy.maxAttempts) && policy.backoff)
    return policy;
  throw new InvalidInputError(
    `${who}: policy must be a policy built with definePolicy, a preset or a preset name, got ${JSON.stringify(policy)}`,
  );
}
