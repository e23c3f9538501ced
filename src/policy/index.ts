export { backoffBase, backoffCap, backoffDelay } from './backoff.js';
export * from './classify/index.js';
export { decide, decideSync, type SyncDecideContext } from './decide.js';
export { type BackoffInput, type DurationInput, definePolicy, type PolicyInput } from './define-policy.js';
export { applyJitter, type JitterInput, jitterBounds } from './jitter.js';
export { type RetryDelayOptions, retryDelay, retryDelayBounds } from './retry-delay.js';
