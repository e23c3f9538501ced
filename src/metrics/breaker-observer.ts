import type { Disposable } from '../common/events.js';
import { withTimeout } from '../common/timeout.js';
import { noteDependency, type ObserverContext } from './context.js';
import { BREAKER_STATE_SET, BREAKER_STATES, LabelBounds } from './labels.js';
import type { BreakerStateName, ObservableBreaker } from './sources.js';

/**
 * Follows a circuit breaker: transitions and refusals are counted from its events (each transition is
 * reported once, by the process that caused it), and at each scrape the state of every known dependency
 * is read from the breaker's shared store, so every process shows the fleet's state. The state gauge has
 * one series per state, 1 for the current one, so `breaker_state{state="open"} == 1` selects open breakers.
 */
export function observeBreakerState(
  breaker: ObservableBreaker,
  ctx: ObserverContext,
  dependencies: readonly string[] = [],
): Disposable {
  const { instruments: m } = ctx;
  for (const dependency of dependencies) noteDependency(ctx, dependency);
  // What this process last saw, for a breaker that cannot be read at scrape time.
  const seen = new Map<string, BreakerStateName>();
  const subs = [
    breaker.events.on('state-change', (e) => {
      const dependency = noteDependency(ctx, e.dependency);
      m.breakerTransitions.inc({
        dependency,
        from: LabelBounds.closed(e.from, BREAKER_STATE_SET),
        to: LabelBounds.closed(e.to, BREAKER_STATE_SET),
      });
      if (BREAKER_STATE_SET.has(e.to)) seen.set(dependency, e.to);
    }),
    breaker.events.on('rejected', (e) =>
      m.breakerRejections.inc({
        dependency: noteDependency(ctx, e.dependency),
        state: LabelBounds.closed(e.state, BREAKER_STATE_SET),
      }),
    ),
  ];

  const show = (dependency: string, state: string) => {
    for (const s of BREAKER_STATES) m.breakerState.set({ dependency, state: s }, s === state ? 1 : 0);
  };
  const refresh = async (): Promise<void> => {
    const read = breaker.state?.bind(breaker);
    if (!read) {
      for (const [dependency, state] of seen) show(dependency, state);
      return;
    }
    try {
      const listed = await withTimeout(
        breaker.dependencies?.() ?? [],
        ctx.readTimeoutMs,
        'the breaker store',
      );
      for (const dependency of listed) noteDependency(ctx, dependency);
    } catch (error) {
      ctx.onError(error);
    }
    await Promise.all(
      [...ctx.dependencies].map(async (dependency) => {
        try {
          const snapshot = await withTimeout(
            read(dependency),
            ctx.readTimeoutMs,
            `breaker state of ${dependency}`,
          );
          if (snapshot && !snapshot.degraded && BREAKER_STATE_SET.has(snapshot.state))
            show(dependency, snapshot.state);
        } catch (error) {
          ctx.onError(error);
        }
      }),
    );
  };
  const removeSource = ctx.scrape.add({ refresh });
  return {
    dispose: () => {
      for (const sub of subs) sub.dispose();
      removeSource();
    },
  };
}
