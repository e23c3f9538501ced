/**
 * stormguard's PostgreSQL stores for the end-to-end tests, loaded only when `STORMGUARD_TEST_BACKEND` is
 * `postgres` (a project on BullMQ 5 need not install `pg`). Like `./stormguard.ts`, the one module a
 * matrix cell replaces to test the installed package (`stormguard/postgres`).
 */
export {
  PostgresAuditLog,
  PostgresBreakerStore,
  PostgresBudgetStore,
  PostgresDeadLetterStore,
  PostgresFlowStore,
  PostgresIdempotencyStore,
} from '../../src/postgres/index.js';
