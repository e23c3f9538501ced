import { type Gauge, type Registry, register } from 'prom-client';
import { type Clock, systemClock } from '../common/clock.js';
import type { Disposable } from '../common/events.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { observeBreakerState } from './breaker-observer.js';
import { type ObserveBudgetOptions, observeBudgetState } from './budget-observer.js';
import { DEFAULT_PREFIX, METRICS, RETRY_DELAY_BUCKETS_SECONDS } from './catalog.js';
import type { ObserverContext } from './context.js';
import { observeDeadLetterDepth } from './dead-letter-observer.js';
import { createInstruments, type Instruments, removeInstruments } from './instruments.js';
import { LabelBounds } from './labels.js';
import { ScrapeCoordinator } from './scrape.js';
import type {
  ObservableBreaker,
  ObservableBudget,
  ObservableDeadLetterQueue,
  ObservableWorker,
} from './sources.js';
import { observeWorkerEvents } from './worker-observer.js';

/**
 * Options of {@link createMetrics}; every one has a default.
 *
 * @example
 * createMetrics({ registry, maxLabelValues: 50, readTimeoutMs: 500 });
 */
export interface MetricsOptions {
  /** Where the metrics are registered. Default: prom-client's global `register`. */
  registry?: Registry;
  /** Prefix of every metric name. Default `stormguard_` (the shipped rules and dashboard assume it). */
  prefix?: string;
  /** Distinct values a label (queue, task, dependency) may take before new ones read `other`. Default 100. */
  maxLabelValues?: number;
  /** How long a scrape waits for the budget store or a dead-letter queue before leaving its figures out. Default 1000 ms. */
  readTimeoutMs?: number;
  /** Histogram buckets for scheduled retry delays, in seconds. Default 0.1 s … 1 h (14 buckets). */
  retryDelayBuckets?: readonly number[];
  /** Told about scrape-time reads that failed or timed out, and about a label that reached its limit. Default: ignored (the `budget_state_errors_total` counter still shows them). */
  onError?: (error: unknown) => void;
  /** Paces the budget's dependency listing (see `observeBudget`). Default: the system clock. */
  clock?: Clock;
}

/**
 * stormguard's Prometheus instruments on one registry. Each `observe…` returns a Disposable that stops it.
 *
 * @example
 * const sub = metrics.observeWorker(worker);
 * sub.dispose(); // stop counting this worker; its counts stay
 */
export interface StormguardMetrics extends Disposable {
  readonly registry: Registry;
  readonly prefix: string;
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
}

/**
 * Creates stormguard's Prometheus metrics (see "Watching a fleet" in docs/operations.md for the list) and
 * returns observers that subscribe them to workers, budgets, breakers and dead-letter queues. The core
 * never imports prom-client: metrics only listen to events and read state when scraped.
 *
 * Disposing the result stops every observation and removes the metrics from the registry.
 *
 * @example
 * import { Registry } from 'prom-client';
 * import { createMetrics, serveMetrics } from 'stormguard/prometheus';
 *
 * const registry = new Registry();
 * const metrics = createMetrics({ registry });
 * metrics.observeWorker(worker);
 * metrics.observeBudget(budget);
 * metrics.observeDeadLetters(deadLetterQueue('search-index', { connection }));
 * await serveMetrics({ port: 9464, registry });
 */
export function createMetrics(options: MetricsOptions = {}): StormguardMetrics {
  const registry = options.registry ?? register;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(prefix))
    throw new InvalidInputError(
      `metrics: prefix "${prefix}" is not a valid Prometheus name prefix; use letters, digits, _ and :, not starting with a digit`,
    );
  const maxLabelValues = options.maxLabelValues ?? 100;
  if (!Number.isInteger(maxLabelValues) || maxLabelValues < 1)
    throw new InvalidInputError(`metrics: maxLabelValues must be an integer >= 1, got ${maxLabelValues}`);
  const readTimeoutMs = options.readTimeoutMs ?? 1000;
  if (!Number.isFinite(readTimeoutMs) || readTimeoutMs <= 0)
    throw new InvalidInputError(
      `metrics: readTimeoutMs must be a number of milliseconds > 0, got ${readTimeoutMs}`,
    );
  const onError = options.onError ?? (() => {});
  const clock = options.clock ?? systemClock;

  let instruments: Instruments | undefined;
  const scrapeGauges = (): Gauge<string>[] =>
    instruments
      ? (Object.keys(METRICS) as (keyof typeof METRICS)[])
          .filter((key) => METRICS[key].source === 'scrape' && METRICS[key].type === 'gauge')
          .map((key) => instruments?.[key] as Gauge<string>)
      : [];
  const scrape = new ScrapeCoordinator(scrapeGauges);
  instruments = createInstruments({
    registry,
    prefix,
    retryDelayBuckets: options.retryDelayBuckets ?? RETRY_DELAY_BUCKETS_SECONDS,
    collect: () => scrape.collect(),
  });
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
    registry,
    prefix,
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
    dispose: () => {
      for (const d of [...live]) {
        live.delete(d);
        d.dispose();
      }
      removeInstruments(registry, prefix);
    },
  };
}
