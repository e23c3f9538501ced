import { type Clock, systemClock } from '../common/clock.js';
import type { Disposable } from '../common/events.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { observeBreakerState } from './breaker-observer.js';
import { type ObserveBudgetOptions, observeBudgetState } from './budget-observer.js';
import type { MetricInstruments, ObserverContext } from './context.js';
import { observeDeadLetterDepth } from './dead-letter-observer.js';
import { type ObserveFlowOptions, observeFlowStore } from './flow-store-observer.js';
import { LabelBounds } from './labels.js';
import { observeLimitStore } from './limits-observer.js';
import type { ScrapeCoordinator } from './scrape.js';
import type {
  ObservableBreaker,
  ObservableBudget,
  ObservableDeadLetterQueue,
  ObservableFlowStore,
  ObservableLimitStore,
  ObservableWorker,
} from './sources.js';
import { observeWorkerEvents } from './worker-observer.js';

/**
 * How observers count and read, whatever client records the figures; every one has a default.
 *
 * @example
 * const options: ObserverOptions = { maxLabelValues: 50, readTimeoutMs: 500 };
 */
export interface ObserverOptions {
  /** Distinct values a label (queue, task, dependency) may take before new ones read `other`. Default 100. */
  maxLabelValues?: number;
  /** How long a scrape waits for the budget store or a dead-letter queue before leaving its figures out. Default 1000 ms. */
  readTimeoutMs?: number;
  /** Told about scrape-time reads that failed or timed out, and about a label that reached its limit. Default: ignored (the `budget_state_errors_total` counter still shows them). */
  onError?: (error: unknown) => void;
  /** Paces the budget's dependency listing (see `observeBudget`). Default: the system clock. */
  clock?: Clock;
}

/**
 * The observations one set of instruments makes. Each `observe…` returns a Disposable that stops it.
 *
 * @example
 * const sub = metrics.observeWorker(worker);
 * sub.dispose(); // stop counting this worker; its counts stay
 */
export interface Observers extends Disposable {
  /** Counts a worker's attempts, successes, retries, deferrals, dead letters, completions and replays. */
  observeWorker(worker: ObservableWorker): Disposable;
  /**
   * Counts a budget's grants and denials and exports its fleet-wide state (allowance, spent, …) at scrape
   * time, for the dependencies this process uses and, listed every `listIntervalMs` (default 60 s), those
   * the rest of the fleet uses.
   */
  observeBudget(budget: ObservableBudget, options?: ObserveBudgetOptions): Disposable;
  /**
   * Follows a circuit breaker: transitions, refusals, and the fleet-wide state of every dependency the
   * metrics have seen (plus `dependencies`, to report breakers this process has not used yet).
   */
  observeBreaker(breaker: ObservableBreaker, options?: { dependencies?: readonly string[] }): Disposable;
  /**
   * Exports the depth of a dead-letter queue at scrape time, labelled with its source queue (or
   * `options.queue`), and counts the jobs its replays put back.
   */
  observeDeadLetters(dlq: ObservableDeadLetterQueue, options?: { queue?: string }): Disposable;
  /**
   * Exports flow control's fleet-wide state at scrape time, read from its store (a fleet's `flow`):
   * `flow_control_enabled` (0 while `stormguard flow off` holds) and `flow_dependency_down{dependency}` for
   * every dependency the metrics know, plus `dependencies`.
   */
  observeFlow(store: ObservableFlowStore, options?: ObserveFlowOptions): Disposable;
  /**
   * Exports every limited dependency's fleet-wide limits at scrape time, read from the store (a fleet's
   * `flow`): `limit_in_flight`, `limit_max_in_flight`, `limit_max_rate_per_second`, `limit_held`,
   * `limit_hold_remaining_seconds` and `limit_paused`, each `{dependency}`. The waits and holds a worker
   * meets are counted by `observeWorker`.
   */
  observeLimits(store: ObservableLimitStore): Disposable;
}

/** {@link ObserverOptions} with their defaults, checked. */
export type ResolvedObserverOptions = Required<ObserverOptions>;

/**
 * Checks and completes observer options; `what` names the caller in errors (`metrics`, `otel metrics`).
 *
 * @example
 * resolveObserverOptions({ maxLabelValues: 0 }, 'metrics'); // throws: maxLabelValues must be an integer >= 1
 */
export function resolveObserverOptions(options: ObserverOptions, what: string): ResolvedObserverOptions {
  const maxLabelValues = options.maxLabelValues ?? 100;
  if (!Number.isInteger(maxLabelValues) || maxLabelValues < 1)
    throw new InvalidInputError(`${what}: maxLabelValues must be an integer >= 1, got ${maxLabelValues}`);
  const readTimeoutMs = options.readTimeoutMs ?? 1000;
  if (!Number.isFinite(readTimeoutMs) || readTimeoutMs <= 0)
    throw new InvalidInputError(
      `${what}: readTimeoutMs must be a number of milliseconds > 0, got ${readTimeoutMs}`,
    );
  return {
    maxLabelValues,
    readTimeoutMs,
    onError: options.onError ?? (() => {}),
    clock: options.clock ?? systemClock,
  };
}

/**
 * Subscribes `instruments` to workers, budgets, breakers, dead-letter queues, flow control and limits: the one counting logic
 * behind the Prometheus exporter and the OpenTelemetry meter. Disposing stops every observation.
 *
 * @example
 * const observers = createObservers(instruments, scrape, resolveObserverOptions({}, 'metrics'));
 * observers.observeWorker(worker);
 */
export function createObservers(
  instruments: MetricInstruments,
  scrape: ScrapeCoordinator,
  options: ResolvedObserverOptions,
): Observers {
  const { maxLabelValues, readTimeoutMs, onError, clock } = options;
  const ctx: ObserverContext = {
    instruments,
    bounds: new LabelBounds(maxLabelValues, (label, value) =>
      onError(
        new Error(
          `metrics: label "${label}" reached ${maxLabelValues} distinct values; "${value}" and later ones read "other"`,
        ),
      ),
    ),
    scrape,
    readTimeoutMs,
    onError,
    dependencies: new Set(),
    replaySources: new Map(),
  };

  const live = new Set<Disposable>();
  const track = (d: Disposable): Disposable => {
    live.add(d);
    return {
      dispose: () => {
        if (live.delete(d)) d.dispose();
      },
    };
  };

  return {
    observeWorker: (worker) => track(observeWorkerEvents(worker, ctx)),
    observeBudget: (budget, opts) => track(observeBudgetState(budget, { ...ctx, clock }, opts)),
    observeBreaker: (breaker, opts) => track(observeBreakerState(breaker, ctx, opts?.dependencies)),
    observeDeadLetters: (dlq, opts) => {
      const queue = opts?.queue ?? dlq.sourceQueue;
      if (!queue)
        throw new InvalidInputError(
          'metrics: observeDeadLetters needs the source queue name; pass { queue } or a queue from deadLetterQueue()',
        );
      return track(observeDeadLetterDepth(dlq, queue, ctx));
    },
    observeFlow: (store, opts) => track(observeFlowStore(store, ctx, opts)),
    observeLimits: (store) => track(observeLimitStore(store, ctx)),
    dispose: () => {
      for (const d of [...live]) {
        live.delete(d);
        d.dispose();
      }
    },
  };
}
