/**
 * What you need to test your own jobs against stormguard: a clock that moves only when told, a seeded
 * random source, and in-memory stores.
 *
 * @example
 * import { FakeClock, seededRandom } from 'stormguard/testing';
 */
export { MemoryBreakerStore } from '../breaker/memory-store.js';
export { MemoryBudgetStore } from '../budget/memory-store.js';
export { FakeClock } from '../common/clock.js';
export { seededRandom } from '../common/random.js';
export { MemoryIdempotencyStore } from '../idempotency/memory-store.js';
