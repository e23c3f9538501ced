import type { LimitState } from '../runtime/limits/store.js';
import type { DependencyLimitStatus, LimitStatusSource } from './types.js';

/**
 * A dependency's limits as the read model shows them, from the store's {@link LimitState}: how long a hold
 * has left and an override until it lapses (by the store's clock), whether an operator paused it, and
 * whether its calls in flight fill its `maxInFlight` (pinned). Pure.
 *
 * @example
 * limitStatusOf({ dependency: 'openai', nowMs: 1_000, inFlight: 25, declared: { maxInFlight: 25 },
 *   effective: { maxInFlight: 25 }, probing: false }).pinned; // true
 */
export function limitStatusOf(state: LimitState): DependencyLimitStatus {
  const status: DependencyLimitStatus = {
    inFlight: state.inFlight,
    declared: { ...state.declared },
    effective: { ...state.effective },
    probing: state.probing,
    paused: state.override?.paused === true,
    pinned: state.effective.maxInFlight !== undefined && state.inFlight >= state.effective.maxInFlight,
  };
  if (state.override) {
    const { expiresAtMs } = state.override;
    status.override =
      expiresAtMs === undefined
        ? { ...state.override }
        : { ...state.override, expiresInMs: Math.max(0, expiresAtMs - state.nowMs) };
  }
  if (state.hold) status.hold = { ...state.hold, remainingMs: Math.max(0, state.hold.untilMs - state.nowMs) };
  if (state.recoveredAtMs !== undefined) status.recoveredAtMs = state.recoveredAtMs;
  return status;
}

/**
 * Every limited dependency's limits, read from `source`: the store's listing, then one `limitState`
 * each (at the same time), in the listing's order.
 *
 * @example
 * const limits = await readLimits(fleet.flow); // [['openai', { inFlight: 24, ... }]]
 */
export async function readLimits(source: LimitStatusSource): Promise<[string, DependencyLimitStatus][]> {
  const names = await source.limitedDependencies();
  return Promise.all(
    names.map(
      async (dependency): Promise<[string, DependencyLimitStatus]> => [
        dependency,
        limitStatusOf(await source.limitState(dependency)),
      ],
    ),
  );
}
