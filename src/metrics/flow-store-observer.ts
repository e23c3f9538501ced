import type { Disposable } from '../common/events.js';
import { withTimeout } from '../common/timeout.js';
import { noteDependency, type ObserverContext } from './context.js';
import type { ObservableFlowStore } from './sources.js';

/**
 * Options of `observeFlow`.
 *
 * @example
 * const options: ObserveFlowOptions = { dependencies: ['search', 'mail'] };
 */
export interface ObserveFlowOptions {
  /** Dependencies to report from the first scrape on, beyond those the other observers have seen. Default none. */
  dependencies?: readonly string[];
}

/**
 * Reads flow control's fleet-wide state from its store at each scrape: whether the kill switch turned it
 * off, and which dependencies it marks down. The store lists no dependencies, so the down gauge covers
 * every dependency the metrics know (workers, budgets, breakers, and `options.dependencies`); one that a
 * budget or breaker listing finds shows from the scrape after. A read that fails or times out leaves its
 * gauge out of that scrape, as the budget and breaker gauges do, rather than reporting a guess.
 *
 * @example
 * const sub = observeFlowStore(fleet.flow, ctx, { dependencies: ['search'] });
 */
export function observeFlowStore(
  store: ObservableFlowStore,
  ctx: ObserverContext,
  options: ObserveFlowOptions = {},
): Disposable {
  const { instruments: m } = ctx;
  for (const dependency of options.dependencies ?? []) noteDependency(ctx, dependency);

  const readSwitch = async (): Promise<void> => {
    try {
      const off = await withTimeout(store.switchedOff(), ctx.readTimeoutMs, 'the flow kill switch');
      m.flowControlEnabled.set({}, off ? 0 : 1);
    } catch (error) {
      ctx.onError(error);
    }
  };
  const readMark = async (dependency: string): Promise<void> => {
    try {
      const snapshot = await withTimeout(
        store.read(dependency),
        ctx.readTimeoutMs,
        `flow state of ${dependency}`,
      );
      m.flowDependencyDown.set({ dependency }, snapshot.down ? 1 : 0);
    } catch (error) {
      ctx.onError(error);
    }
  };
  const removeSource = ctx.scrape.add({
    refresh: async () => {
      await Promise.all([readSwitch(), ...[...ctx.dependencies].map(readMark)]);
    },
  });
  return { dispose: removeSource };
}
