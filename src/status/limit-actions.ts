import type { AuditEntry, AuditLog } from '../audit/types.js';
import { MAX_DURATION_MS } from '../common/duration.js';
import { assertDependencyName } from '../common/names.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { DependencyLimit, LimitOverride, LimitState, LimitStore } from '../runtime/limits/store.js';

/**
 * What an operator does to a dependency's limits:
 * - `set`: override `maxInFlight` and/or `maxRatePerSecond` (the fields given; the override's other
 *   fields stay);
 * - `pause`: no call to the dependency starts anywhere until `resume` (its other override fields stay);
 * - `resume`: lift the pause, keep the other override fields (an override left with none goes);
 * - `reset`: back to the workers' code: the override and any Retry-After hold go.
 *
 * @example
 * const action: LimitAction = 'pause';
 */
export type LimitAction = 'set' | 'pause' | 'resume' | 'reset';

/**
 * Every {@link LimitAction}, in the order the CLI and the console offer them.
 *
 * @example
 * LIMIT_ACTIONS.includes('pause'); // true
 */
export const LIMIT_ACTIONS: readonly LimitAction[] = ['set', 'pause', 'resume', 'reset'];

/**
 * An operator's request, checked by {@link checkLimitChange}.
 *
 * @example
 * const request: LimitChangeRequest = { reason: 'vendor incident', by: 'alice', maxInFlight: 10, expiresInMs: 1_800_000 };
 */
export interface LimitChangeRequest {
  /** Why, in words the next operator understands (required, 1-500 characters). */
  reason: string;
  /** Who acts, for the override and the audit log. Default `anonymous`. */
  by?: string | undefined;
  /** `set` only: calls in flight at once, fleet-wide (a whole number, 1-1 000 000). */
  maxInFlight?: number | undefined;
  /** `set` only: calls started per second, fleet-wide (above 0, at most 1 000 000). */
  maxRatePerSecond?: number | undefined;
  /**
   * `set` and `pause`: the override lapses by itself this long from now (store time). Without it, the
   * override lasts until a reset: the latest `set` or `pause` decides. `resume` keeps the expiry it finds.
   */
  expiresInMs?: number | undefined;
}

/**
 * The outcome of {@link changeLimits}: the dependency's state after the change, and the audit entry.
 *
 * @example
 * const { state, audit } = await changeLimits({ store: fleet.flow, audit: fleet.audit }, 'openai', 'pause', { reason: 'incident' });
 */
export interface LimitChangeResult {
  dependency: string;
  action: LimitAction;
  /** The dependency's limits as the store answered the change. */
  state: LimitState;
  /** The entry written, when an audit log was given. */
  audit?: AuditEntry;
}

const MAX_REASON = 500;
const MAX_BY = 200;
const MAX_LIMIT = 1_000_000;

/**
 * Checks an operator's limits request before any store sees it: a known action, a reason, who acts, and
 * only the fields the action takes, each in range. Returns it with its text trimmed; throws an
 * {@link InvalidInputError} naming what is wrong and how to fix it (each field by its name in `names`
 * when given: the CLI's flags, the console's form fields).
 *
 * @example
 * checkLimitChange('set', { reason: ' incident ', maxInFlight: 10 }); // { reason: 'incident', by: 'anonymous', maxInFlight: 10 }
 * checkLimitChange('set', { reason: 'incident' }); // throws: set needs maxInFlight or maxRatePerSecond
 */
export function checkLimitChange(
  action: unknown,
  request: { [K in keyof LimitChangeRequest]?: unknown },
  names: Partial<Record<keyof LimitChangeRequest, string>> = {},
): LimitChangeRequest & { by: string } {
  const name = (field: keyof LimitChangeRequest) => names[field] ?? field;
  if (!LIMIT_ACTIONS.includes(action as LimitAction))
    throw new InvalidInputError(
      `limits action ${JSON.stringify(action)}: use one of ${LIMIT_ACTIONS.join(', ')}`,
    );
  const reason = typeof request.reason === 'string' ? request.reason.trim() : '';
  if (reason === '' || reason.length > MAX_REASON)
    throw new InvalidInputError(
      `${name('reason')}: changing a dependency's limits needs a reason of 1-${MAX_REASON} characters saying why (for example "vendor incident, 429s since 14:00")`,
    );
  const by = request.by === undefined ? 'anonymous' : typeof request.by === 'string' ? request.by.trim() : '';
  if (by === '' || by.length > MAX_BY)
    throw new InvalidInputError(
      `${name('by')}: who changes limits must be 1-${MAX_BY} characters (an identity, or leave it out for "anonymous")`,
    );
  const checked: LimitChangeRequest & { by: string } = { reason, by };
  const given = (field: keyof LimitChangeRequest) => request[field] !== undefined;
  for (const field of ['maxInFlight', 'maxRatePerSecond'] as const)
    if (given(field) && action !== 'set')
      throw new InvalidInputError(
        `${name(field)}: only "set" changes it (to ${action} a dependency, leave it out)`,
      );
  if (given('expiresInMs') && action !== 'set' && action !== 'pause')
    throw new InvalidInputError(
      `${name('expiresInMs')}: only "set" and "pause" take an expiry (${action} keeps or clears the override's own)`,
    );
  if (action === 'set') {
    if (!given('maxInFlight') && !given('maxRatePerSecond'))
      throw new InvalidInputError(
        `set: give ${name('maxInFlight')} and/or ${name('maxRatePerSecond')} (to stop every call, pause the dependency instead)`,
      );
    if (given('maxInFlight')) {
      const n = request.maxInFlight;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_LIMIT)
        throw new InvalidInputError(
          `${name('maxInFlight')}: ${JSON.stringify(n)} is not a whole number from 1 to ${MAX_LIMIT} (to stop every call, pause the dependency instead)`,
        );
      checked.maxInFlight = n;
    }
    if (given('maxRatePerSecond')) {
      const n = request.maxRatePerSecond;
      if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || n > MAX_LIMIT)
        throw new InvalidInputError(
          `${name('maxRatePerSecond')}: ${JSON.stringify(n)} is not a number above 0 and at most ${MAX_LIMIT} (0.5 is one call every 2 s)`,
        );
      checked.maxRatePerSecond = n;
    }
  }
  if (given('expiresInMs')) {
    const ms = request.expiresInMs;
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1_000 || ms > MAX_DURATION_MS)
      throw new InvalidInputError(
        `${name('expiresInMs')}: ${JSON.stringify(ms)} ms is not a duration from 1s to 3650d; write it like 30m or 4h`,
      );
    checked.expiresInMs = ms;
  }
  return checked;
}

/**
 * An operator's change of a dependency's limits (set, pause, resume, reset: see {@link LimitAction}),
 * recorded in the audit log: what `stormguard limits set|pause|resume|reset` and the console call. The
 * override lives in the flow store and wins over every worker's code until it lapses or is reset; workers
 * follow it within their `stateCacheMs`. The change is applied first and then recorded (action
 * `limits.<action>`, target the dependency, detail the effective limits and pause it moved from and to),
 * so the log never shows a change that did not happen; when the log cannot be written the error says the
 * change stands. The store replaces an override whole, so the current one is read first and its fields
 * carried over: two operators changing one dependency at the same moment may lose one change (the audit
 * log shows both).
 *
 * @example
 * import { changeLimits } from 'stormguard';
 * import { redisFleet } from 'stormguard/redis';
 *
 * const fleet = redisFleet({ redis: process.env.REDIS_URL });
 * await changeLimits({ store: fleet.flow, audit: fleet.audit }, 'openai', 'pause', {
 *   reason: 'vendor incident, 429s since 14:00',
 *   by: 'alice',
 *   expiresInMs: 30 * 60_000,
 * });
 * await fleet.close();
 */
export async function changeLimits(
  target: { store: Pick<LimitStore, 'limitState' | 'overrideLimits'>; audit?: AuditLog | undefined },
  dependency: string,
  action: LimitAction,
  request: LimitChangeRequest,
): Promise<LimitChangeResult> {
  assertDependencyName(dependency);
  const checked = checkLimitChange(action, request);
  const before = await target.store.limitState(dependency);
  const state = await apply(target.store, dependency, action, checked, before);
  const result: LimitChangeResult = { dependency, action, state };
  if (!target.audit) return result;
  try {
    result.audit = await target.audit.append({
      by: checked.by,
      action: `limits.${action}`,
      target: dependency,
      reason: checked.reason,
      detail: {
        from: summary(before),
        to: summary(state),
        ...(state.override?.expiresAtMs === undefined ? {} : { expiresAtMs: state.override.expiresAtMs }),
        ...(action === 'reset' && before.hold ? { holdLifted: true } : {}),
      },
    });
    return result;
  } catch (error) {
    throw new Error(
      `the ${dependency} limits change (${action}) was applied, but the audit log could not record it: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { cause: error },
    );
  }
}

/** Writes the override the action leaves, carrying over the fields of the current one. */
function apply(
  store: Pick<LimitStore, 'overrideLimits'>,
  dependency: string,
  action: LimitAction,
  request: LimitChangeRequest & { by: string },
  before: LimitState,
) {
  if (action === 'reset') return store.overrideLimits(dependency, undefined, { clearHold: true });
  const current = before.override;
  const fields: DependencyLimit & Pick<LimitOverride, 'paused'> = {};
  if (current?.maxInFlight !== undefined) fields.maxInFlight = current.maxInFlight;
  if (current?.maxRatePerSecond !== undefined) fields.maxRatePerSecond = current.maxRatePerSecond;
  if (current?.paused) fields.paused = true;
  if (request.maxInFlight !== undefined) fields.maxInFlight = request.maxInFlight;
  if (request.maxRatePerSecond !== undefined) fields.maxRatePerSecond = request.maxRatePerSecond;
  if (action === 'pause') fields.paused = true;
  let expiresInMs = request.expiresInMs;
  if (action === 'resume') {
    delete fields.paused;
    // Resume keeps the override's expiry; an override left with nothing in it goes.
    if (fields.maxInFlight === undefined && fields.maxRatePerSecond === undefined)
      return store.overrideLimits(dependency, undefined);
    if (current?.expiresAtMs !== undefined) expiresInMs = Math.max(1, current.expiresAtMs - before.nowMs);
  }
  return store.overrideLimits(dependency, {
    ...fields,
    reason: request.reason,
    by: request.by,
    ...(expiresInMs === undefined ? {} : { expiresInMs }),
  });
}

/** The effective limits and the pause, as the audit entry records them (plain JSON). */
function summary(state: LimitState): Record<string, unknown> {
  return {
    ...(state.effective.maxInFlight === undefined ? {} : { maxInFlight: state.effective.maxInFlight }),
    ...(state.effective.maxRatePerSecond === undefined
      ? {}
      : { maxRatePerSecond: state.effective.maxRatePerSecond }),
    paused: state.override?.paused === true,
  };
}
