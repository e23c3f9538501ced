/**
 * `stormguard/dashboard`: the operator console as a request handler over a fleet's stores (`redisFleet`
 * from `stormguard/redis`, `postgresFleet` from `stormguard/postgres`). See docs/console.md.
 */

export type { DashboardEvents, LiveClientDropped } from './feed.js';
export { createDashboard, type DashboardHandler, type DashboardOptions } from './handler.js';
export { CONTENT_SECURITY_POLICY } from './http/security.js';
export type { OverviewSnapshot } from './overview.js';
