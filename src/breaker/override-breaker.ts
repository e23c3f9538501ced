import type { AuditEntry, AuditLog } from '../audit/types.js';
import { type ResolvedBreakerOptions, resolveBreakerOptions } from './options.js';
import { checkOverride } from './override.js';
import type { BreakerOverrideOp, BreakerRecordResult, BreakerStore } from './types.js';

/**
 * The outcome of {@link overrideBreaker}: the store's answer, and the audit entry written for it.
 *
 * @example
 * const { snapshot, audit } = await overrideBreaker({ store, audit: log }, 'search', 'force-open', { reason: 'reindexing' });
 */
export interface BreakerOverrideResult extends BreakerRecordResult {
  audit?: AuditEntry;
}

/**
 * An operator's breaker override (force open, force closed, reset), recorded in the audit log: what the
 * CLI's `stormguard breaker force-open|force-close|reset` and the console call. The reason is required;
 * `by` defaults to `anonymous`. The override is applied first and then recorded (action
 * `breaker.<op>`, target the dependency, detail the state it moved from and to), so the log never shows
 * an action that did not happen; when the log cannot be written the error says the override stands.
 * `options` serve only a breaker no worker has written yet (the writers' own options win). Every worker
 * honours the override within its `stateCacheMs`.
 *
 * @example
 * import { overrideBreaker, MemoryAuditLog } from 'stormguard';
 * import { RedisBreakerStore, RedisAuditLog } from 'stormguard/redis';
 *
 * await overrideBreaker(
 *   { store: new RedisBreakerStore({ redis }), audit: new RedisAuditLog({ redis }) },
 *   'search',
 *   'force-open',
 *   { reason: 'search cluster reindexing until 14:00', by: 'alice' },
 * );
 */
export async function overrideBreaker(
  target: { store: BreakerStore; audit?: AuditLog },
  dependency: string,
  op: BreakerOverrideOp,
  request: { reason: string; by?: string },
  options: ResolvedBreakerOptions = resolveBreakerOptions(),
): Promise<BreakerOverrideResult> {
  const checked = checkOverride(op, request);
  if (!target.store.override)
    throw new TypeError('this breaker store has no override(): use a store from stormguard, or add one');
  const before = await target.store.read(dependency, options);
  const result = await target.store.override(dependency, op, checked, options);
  if (!target.audit) return result;
  try {
    const audit = await target.audit.append({
      by: checked.by,
      action: `breaker.${op}`,
      target: dependency,
      reason: checked.reason,
      detail: { from: before.state, to: result.snapshot.state },
    });
    return { ...result, audit };
  } catch (error) {
    throw new Error(
      `the ${dependency} breaker override (${op}) was applied, but the audit log could not record it: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { cause: error },
    );
  }
}
