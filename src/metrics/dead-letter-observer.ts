import type { Disposable } from '../common/events.js';
import { withTimeout } from '../common/timeout.js';
import type { ObserverContext } from './context.js';
import type { ObservableDeadLetterQueue } from './sources.js';
import { countReplays } from './worker-observer.js';

/**
 * Reads a dead-letter queue's depth at each scrape (a queue that does not answer in time is left out),
 * and counts the jobs its replays put back when it emits `replayed`.
 */
export function observeDeadLetterDepth(
  dlq: ObservableDeadLetterQueue,
  queue: string,
  ctx: ObserverContext,
): Disposable {
  const labels = { queue: ctx.bounds.open('queue', queue) };
  const removeSource = ctx.scrape.add({
    refresh: async () => {
      try {
        ctx.instruments.deadLetterDepth.set(
          labels,
          await withTimeout(dlq.count(), ctx.readTimeoutMs, `dead-letter queue of ${queue}`),
        );
      } catch (error) {
        ctx.onError(error);
      }
    },
  });
  const replays = dlq.events ? countReplays(dlq.events, ctx) : undefined;
  return {
    dispose: () => {
      removeSource();
      replays?.dispose();
    },
  };
}
