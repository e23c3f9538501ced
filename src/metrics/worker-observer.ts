import type { Disposable } from '../common/events.js';
import type { JobLabels, WorkerEvents } from '../jobs/types.js';
import { noteDependency, type ObserverContext } from './context.js';
import { DEAD_LETTER_REASON_SET, DEFERRAL_CAUSES, LabelBounds } from './labels.js';
import type { ObservableWorker, Subscribable } from './sources.js';

/**
 * Counts a worker's events. A retry that uses up an attempt is a retry; a reschedule that does not
 * (open breaker, budget deferral) is a deferral, so the retry ratio never rises because of its own
 * mitigation. Budget denials are counted by the budget observer, never here.
 */
export function observeWorkerEvents(worker: ObservableWorker, ctx: ObserverContext): Disposable {
  const { instruments: m, bounds } = ctx;
  const job = (e: JobLabels) => ({
    queue: bounds.open('queue', e.queue),
    task: bounds.open('task', e.task),
    dependency: noteDependency(ctx, e.dependency),
  });
  const subs = [
    worker.events.on('attempt', (e) => m.attempts.inc(job(e))),
    worker.events.on('success', (e) => m.successes.inc(job(e))),
    worker.events.on('retry', (e) => {
      const labels = job(e);
      if (e.chargesAttempt === false) {
        m.deferrals.inc({ ...labels, cause: LabelBounds.closed(e.cause, DEFERRAL_CAUSES) });
        return;
      }
      m.retries.inc(labels);
      if (Number.isFinite(e.delayMs) && e.delayMs >= 0) m.retryDelay.observe(labels, e.delayMs / 1000);
    }),
    worker.events.on('dead-letter', (e) =>
      m.deadLetters.inc({ ...job(e), reason: LabelBounds.closed(e.reason, DEAD_LETTER_REASON_SET) }),
    ),
    worker.events.on('completed', (e) => {
      const labels = job(e);
      m.completed.inc(labels);
      if (Number.isFinite(e.attempts) && e.attempts >= 1) m.jobAttempts.observe(labels, e.attempts);
    }),
  ];
  const replays = countReplays(worker.events, ctx);
  if (replays) subs.push(replays);
  return {
    dispose: () => {
      for (const sub of subs) sub.dispose();
    },
  };
}

/**
 * Counts `replayed` events of `events` unless another observation of this metrics instance already does
 * (a dead-letter queue observed as a worker and as a queue). Returns the subscription, if it made one.
 */
export function countReplays(
  events: Subscribable<Pick<WorkerEvents, 'replayed'>>,
  ctx: ObserverContext,
): Disposable | undefined {
  if (ctx.replaySources.has(events)) return undefined;
  ctx.replaySources.add(events);
  const sub = events.on('replayed', (e) =>
    ctx.instruments.replays.inc({
      queue: ctx.bounds.open('queue', e.queue),
      task: ctx.bounds.open('task', e.task),
      reason: LabelBounds.closed(e.reason, DEAD_LETTER_REASON_SET),
    }),
  );
  return {
    dispose: () => {
      sub.dispose();
      ctx.replaySources.delete(events);
    },
  };
}
