export { CircuitBreaker, type CircuitBreakerOptions, type ExecuteOptions } from './circuit-breaker.js';
export {
  BREAKER_OVERRIDE_OPS,
  type BreakerBucket,
  type BreakerOp,
  type BreakerOverrideOp,
  type BreakerOverrideRequest,
  type BreakerRecord,
  type BreakerStep,
  initialBreakerRecord,
  stepBreaker,
} from './machine.js';
export { MemoryBreakerStore, type MemoryBreakerStoreOptions } from './memory-store.js';
export {
  BREAKER_WINDOW_BUCKETS,
  type BreakerOptions,
  DEFAULT_BREAKER_OPTIONS,
  type ResolvedBreakerOptions,
  resolveBreakerOptions,
} from './options.js';
export { type BreakerOverrideResult, overrideBreaker } from './override-breaker.js';
export type * from './types.js';
