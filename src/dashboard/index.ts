/**
 * `stormguard/dashboard`: the operator console as a request handler over the fleet's stores, and the
 * backends that read them. See docs/console.md.
 */

export type { ConsoleBackend } from './backend.js';
export { createDashboard, type DashboardHandler, type DashboardOptions } from './handler.js';
export { CONTENT_SECURITY_POLICY } from './http/security.js';
export type { OverviewSnapshot } from './overview.js';
export { type PostgresConsoleBackendOptions, postgresConsoleBackend } from './postgres-backend.js';
export { type RedisConsoleBackendOptions, redisConsoleBackend } from './redis-backend.js';
