export { CircuitBreaker, type CircuitBreakerOptions, type ExecuteOptions } from './circuit-breaker.js';
export { BREAKER_OVERRIDE_OPS } from './machine.js';
export { MemoryBreakerStore, type MemoryBreakerStoreOptions } from './memory-store.js';
export { type BreakerOptions, DEFAULT_BREAKER_OPTIONS } from './options.js';
export { type BreakerOverrideResult, overrideBreaker } from './override-breaker.js';
export type * from './types.js';
export type { BreakerOverrideOp, BreakerOverrideRequest } from './types.js';
