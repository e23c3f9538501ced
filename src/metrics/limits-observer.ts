import type { Disposable } from '../common/events.js';
import { withTimeout } from '../common/timeout.js';
import type { LimitState } from '../runtime/limits/store.js';
import { noteDependency, type ObserverContext } from './context.js';
import type { ObservableLimitStore } from './sources.js';

/**
 * Reads every limited dependency's limits from the store at each scrape (its listing, then one state read
 * each) and sets the limit gauges: calls in flight, the effective `maxInFlight` and `maxRatePerSecond`
 * (each only when set), whether a Retry-After hold is on and how long it has left, and whether an operator
 * paused it. Every process that observes the store reports the same fleet-wide figures (the rules take
 * their max). A read that fails or times out leaves that dependency out of the scrape, as the budget and
 * breaker gauges do, rather than reporting a guess.
 *
 * @example
 * const sub = observeLimitStore(fleet.flow, ctx);
 */
export function observeLimitStore(store: ObservableLimitStore, ctx: ObserverContext): Disposable {
  const { instruments: m } = ctx;
  const show = (state: LimitState) => {
    const labels = { dependency: noteDependency(ctx, state.dependency) };
    m.limitInFlight.set(labels, state.inFlight);
    if (state.effective.maxInFlight !== undefined)
      m.limitMaxInFlight.set(labels, state.effective.maxInFlight);
    if (state.effective.maxRatePerSecond !== undefined)
      m.limitMaxRate.set(labels, state.effective.maxRatePerSecond);
    const remainingMs = state.hold ? Math.max(0, state.hold.untilMs - state.nowMs) : 0;
    m.limitHeld.set(labels, state.hold && remainingMs > 0 ? 1 : 0);
    m.limitHoldRemaining.set(labels, remainingMs / 1000);
    m.limitPaused.set(labels, state.override?.paused ? 1 : 0);
  };
  const refresh = async (): Promise<void> => {
    let listed: readonly string[];
    try {
      listed = await withTimeout(store.limitedDependencies(), ctx.readTimeoutMs, 'the limits store');
    } catch (error) {
      ctx.onError(error);
      return;
    }
    await Promise.all(
      listed.map(async (dependency) => {
        try {
          show(await withTimeout(store.limitState(dependency), ctx.readTimeoutMs, `limits of ${dependency}`));
        } catch (error) {
          ctx.onError(error);
        }
      }),
    );
  };
  const removeSource = ctx.scrape.add({ refresh });
  return { dispose: removeSource };
}
