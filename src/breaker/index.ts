export { CircuitBreaker, type CircuitBreakerOptions, type ExecuteOptions } from './circuit-breaker.js';
export { MemoryBreakerStore, type MemoryBreakerStoreOptions } from './memory-store.js';
export type { BreakerOptions } from './options.js';
export { type BreakerOverrideResult, overrideBreaker } from './override-breaker.js';
export type * from './types.js';
export type { BreakerOverrideOp, BreakerOverrideRequest } from './types.js';
