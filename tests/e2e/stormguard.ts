/**
 * Everything of stormguard the end-to-end tests use, from one module. In this repository it re-exports the
 * sources; a matrix cell that runs these tests from a fixture project (BullMQ 5 + ioredis 5, installed
 * from the packed tarball) replaces this one file with the same exports from `stormguard`,
 * `stormguard/bullmq` and `stormguard/redis`, so the tests run against the package as users install it,
 * next to that project's own `bullmq`. No e2e file or fixture imports stormguard any other way.
 */

export { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
export { RetryBudget } from '../../src/budget/retry-budget.js';
export type { BudgetStore } from '../../src/budget/store.js';
export { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
export { createWorker, type StormguardProcessor, type StormguardWorker } from '../../src/bullmq/worker.js';
export type { StormguardWorkerOptions } from '../../src/bullmq/worker-options.js';
export type { EventBus } from '../../src/common/events.js';
export { PermanentError } from '../../src/errors/permanent-error.js';
export { TransientError } from '../../src/errors/transient-error.js';
export { type IdempotencyGuard, idempotencyGuard } from '../../src/idempotency/guard.js';
export { definePolicy } from '../../src/policy/define-policy.js';
export { planForWindow } from '../../src/policy/plan-window.js';
export { RedisAuditLog } from '../../src/redis/audit-log.js';
export { RedisBreakerStore } from '../../src/redis/breaker-store.js';
export { RedisBudgetStore } from '../../src/redis/budget-store.js';
export { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
export { RedisFlowStore } from '../../src/redis/flow-store.js';
export { redisIdempotencyGuard } from '../../src/redis/idempotency-guard.js';
export type { DeadLetterStore, StoredDeadLetter } from '../../src/runtime/contracts.js';
export { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
export type { WorkerEvents } from '../../src/runtime/worker-events.js';
