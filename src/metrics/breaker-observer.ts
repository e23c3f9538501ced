import type { Disposable } from '../common/events.js';
import type { ObserverContext } from './context.js';
import { BREAKER_STATE_SET, BREAKER_STATES, LabelBounds } from './labels.js';
import type { BreakerStateName, ObservableBreaker } from './sources.js';

/**
 * Follows a breaker's state changes: a transition counter, and a state gauge with one series per state
 * (1 for the current one) so `breaker_state{state="open"} == 1` selects open breakers.
 */
export function observeBreakerState(breaker: ObservableBreaker, ctx: ObserverContext): Disposable {
  const { instruments: m, bounds } = ctx;
  const current = new Map<string, BreakerStateName>();
  const sub = breaker.events.on('state-change', (e) => {
    const dependency = bounds.open('dependency', e.dependency);
    const from = LabelBounds.closed(e.from, BREAKER_STATE_SET);
    const to = LabelBounds.closed(e.to, BREAKER_STATE_SET);
    m.breakerTransitions.inc({ dependency, from, to });
    if (BREAKER_STATE_SET.has(e.to)) current.set(dependency, e.to);
  });
  const removeSource = ctx.scrape.add({
    refresh: async () => {
      for (const [dependency, state] of current)
        for (const s of BREAKER_STATES) m.breakerState.set({ dependency, state: s }, s === state ? 1 : 0);
    },
  });
  return {
    dispose: () => {
      sub.dispose();
      removeSource();
    },
  };
}
