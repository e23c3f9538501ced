import type { Disposable } from '../common/events.js';
import { withTimeout } from '../common/timeout.js';
import type { JobLabels } from '../runtime/events.js';
import type { WorkerEvents } from '../runtime/worker-events.js';
import { noteDependency, type ObserverContext } from './context.js';
import { DEAD_LETTER_REASON_SET, DEFERRAL_CAUSES, LabelBounds } from './labels.js';
import type { ObservableFlow, ObservableWorker, Subscribable } from './sources.js';

/** The reasons an unfiled job is counted under: a dead-letter reason, or `bookkeeping` for a retry. */
const UNFILED_REASONS: ReadonlySet<string> = new Set([...DEAD_LETTER_REASON_SET, 'bookkeeping']);

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
    worker.events.on('unfiled', (e) =>
      m.jobsUnfiled.inc({ ...job(e), reason: LabelBounds.closed(e.reason, UNFILED_REASONS) }),
    ),
    worker.events.on('dead-letters-evicted', (e) => {
      const queue = bounds.open('queue', e.queue);
      // One filing evicts at most 100 records: counted one by one, as every instrument counts.
      for (const [reason, n] of Object.entries(e.evicted.reasons)) {
        const labels = { queue, reason: LabelBounds.closed(reason, DEAD_LETTER_REASON_SET) };
        for (let i = 0; i < (n ?? 0); i++) m.deadLettersEvicted.inc(labels);
      }
    }),
    worker.events.on('auto-replay-skipped', (e) =>
      m.autoReplaySkipped.inc({
        queue: bounds.open('queue', e.queue),
        reason: LabelBounds.closed(e.reason, DEAD_LETTER_REASON_SET),
      }),
    ),
    worker.events.on('write-conflict', (e) =>
      m.writeConflicts.inc({
        queue: bounds.open('queue', e.queue),
        write: LabelBounds.closed(e.write, CONFLICTED_WRITES),
        outcome: e.again ? 'written-again' : 'gave-up',
      }),
    ),
    worker.events.on('completed', (e) => {
      const labels = job(e);
      m.completed.inc(labels);
      if (Number.isFinite(e.attempts) && e.attempts >= 1) m.jobAttempts.observe(labels, e.attempts);
    }),
  ];
  subs.push(
    worker.events.on('limit-wait', (e) =>
      m.limitWaits.inc({
        queue: bounds.open('queue', e.queue),
        dependency: noteDependency(ctx, e.dependency),
        by: LabelBounds.closed(e.by, LIMIT_REFUSALS),
        outcome: LabelBounds.closed(e.outcome, LIMIT_WAIT_OUTCOMES),
      }),
    ),
    worker.events.on('limit-hold', (e) =>
      m.limitHolds.inc({
        queue: bounds.open('queue', e.queue),
        dependency: noteDependency(ctx, e.dependency),
        reason: LabelBounds.closed(e.reason, LIMIT_HOLD_REASONS),
        capped: e.capped ? 'true' : 'false',
      }),
    ),
  );
  subs.push(countReplays(worker.events, ctx));
  const limits = worker.limits;
  if (limits) {
    // A dependency that drops out of the status (nothing in force, nothing held) keeps its series, at 0.
    const shown = new Set<string>();
    const removeSource = ctx.scrape.add({
      refresh: async () => {
        const queue = bounds.open('queue', limits.queue);
        const now = new Map(limits.status().map((s) => [s.dependency, s.waiting]));
        for (const dependency of new Set([...shown, ...now.keys()])) {
          m.limitWaiting.set(
            { queue, dependency: noteDependency(ctx, dependency) },
            now.get(dependency) ?? 0,
          );
          shown.add(dependency);
        }
      },
    });
    subs.push({ dispose: removeSource });
  }
  const flow = worker.flow;
  if (flow) {
    subs.push(
      worker.events.on('flow-hold', (e) =>
        m.flowHolds.inc({
          queue: bounds.open('queue', e.queue),
          dependency: noteDependency(ctx, e.dependency),
          kind: LabelBounds.closed(e.kind, FLOW_HOLD_KINDS),
          mode: e.shadow ? 'shadow' : 'enforce',
        }),
      ),
    );
    const removeSource = ctx.scrape.add({ refresh: () => showFlow(flow, ctx) });
    subs.push({ dispose: removeSource });
  }
  return {
    dispose: () => {
      for (const sub of subs) sub.dispose();
    },
  };
}

const FLOW_HOLD_KINDS: ReadonlySet<string> = new Set(['pause', 'park']);
const CONFLICTED_WRITES: ReadonlySet<string> = new Set(['completion', 'failure', 'fetch']);
const LIMIT_REFUSALS: ReadonlySet<string> = new Set(['paused', 'hold', 'in-flight', 'rate']);
const LIMIT_WAIT_OUTCOMES: ReadonlySet<string> = new Set(['granted', 'held']);
const LIMIT_HOLD_REASONS: ReadonlySet<string> = new Set(['retry-after']);

/** Sets the paused gauge from the worker's flow control and the parked gauge from its store, at scrape time. */
async function showFlow(flow: ObservableFlow, ctx: ObserverContext): Promise<void> {
  const { instruments: m, bounds } = ctx;
  const queue = bounds.open('queue', flow.queue);
  const paused = new Map(flow.status().map((s) => [s.dependency, s.paused]));
  await Promise.all(
    flow.dependencies().map(async (dependency) => {
      const labels = { queue, dependency: noteDependency(ctx, dependency) };
      m.flowPaused.set(labels, paused.get(dependency) ? 1 : 0);
      try {
        m.flowParked.set(
          labels,
          await withTimeout(flow.parked(dependency), ctx.readTimeoutMs, 'the flow store'),
        );
      } catch (error) {
        ctx.onError(error);
      }
    }),
  );
}

/**
 * Counts `replayed` events of `events`, sharing one subscription between every observation of this
 * metrics instance that passes the same source (a dead-letter queue observed as a worker and as a queue).
 */
export function countReplays(
  events: Subscribable<Pick<WorkerEvents, 'replayed'>>,
  ctx: ObserverContext,
): Disposable {
  let shared = ctx.replaySources.get(events);
  if (!shared) {
    const sub = events.on('replayed', (e) =>
      ctx.instruments.replays.inc({
        queue: ctx.bounds.open('queue', e.queue),
        task: ctx.bounds.open('task', e.task),
        reason: LabelBounds.closed(e.reason, DEAD_LETTER_REASON_SET),
      }),
    );
    shared = { users: 0, dispose: () => sub.dispose() };
    ctx.replaySources.set(events, shared);
  }
  shared.users++;
  const entry = shared;
  let disposed = false;
  return {
    dispose: () => {
      if (disposed) return;
      disposed = true;
      if (--entry.users === 0) {
        entry.dispose();
        ctx.replaySources.delete(events);
      }
    },
  };
}
