export { CircuitBreaker, type CircuitBreakerOptions, type ExecuteOptions } from './circuit-breaker.js';
export { BREAKER_OVERRIDE_OPS, type BreakerOverrideOp, type BreakerOverrideRequest } from './machine.js';
export { MemoryBreakerStore, type MemoryBreakerStoreOptions } from './memory-store.js';
export { type BreakerOptions, DEFAULT_BREAKER_OPTIONS } from './options.js';
export { type BreakerOverrideResult, overrideBreaker } from './override-breaker.js';
export type * from './types.js';
