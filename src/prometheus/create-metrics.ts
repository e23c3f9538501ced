import { type Gauge, type Registry, register } from 'prom-client';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { DEFAULT_PREFIX, METRICS, RETRY_DELAY_BUCKETS_SECONDS } from '../metrics/catalog.js';
import {
  createObservers,
  type ObserverOptions,
  type Observers,
  resolveObserverOptions,
} from '../metrics/observers.js';
import { ScrapeCoordinator } from '../metrics/scrape.js';
import { createInstruments, type Instruments, removeInstruments } from './instruments.js';

/**
 * Options of {@link createMetrics}; every one has a default.
 *
 * @example
 * createMetrics({ registry, maxLabelValues: 50, readTimeoutMs: 500 });
 */
export interface MetricsOptions extends ObserverOptions {
  /** Where the metrics are registered. Default: prom-client's global `register`. */
  registry?: Registry;
  /** Prefix of every metric name. Default `stormguard_` (the shipped rules and dashboard assume it). */
  prefix?: string;
  /** Histogram buckets for scheduled retry delays, in seconds. Default 0.1 s … 1 h (14 buckets). */
  retryDelayBuckets?: readonly number[];
}

/**
 * stormguard's Prometheus instruments on one registry. Each `observe…` returns a Disposable that stops it.
 *
 * @example
 * const sub = metrics.observeWorker(worker);
 * sub.dispose(); // stop counting this worker; its counts stay
 */
export interface StormguardMetrics extends Observers {
  readonly registry: Registry;
  readonly prefix: string;
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
  const resolved = resolveObserverOptions(options, 'metrics');

  let instruments: Instruments | undefined;
  const scrapeGauges = (): { reset(): void }[] =>
    instruments
      ? (Object.keys(METRICS) as (keyof typeof METRICS)[])
          .filter((key) => METRICS[key].source === 'scrape' && METRICS[key].type === 'gauge')
          .map((key) => forgetting(instruments?.[key] as Gauge<string>, METRICS[key].labels.length))
      : [];
  const scrape = new ScrapeCoordinator(scrapeGauges);
  instruments = createInstruments({
    registry,
    prefix,
    retryDelayBuckets: options.retryDelayBuckets ?? RETRY_DELAY_BUCKETS_SECONDS,
    collect: () => scrape.collect(),
  });
  const observers = createObservers(instruments, scrape, resolved);
  return {
    ...observers,
    registry,
    prefix,
    dispose: () => {
      observers.dispose();
      removeInstruments(registry, prefix);
    },
  };
}

/**
 * A scrape-time gauge whose reset forgets every series. prom-client's own reset puts a label-less gauge
 * back at 0, which would report a read that timed out as a reading (0 for `flow_control_enabled` says
 * flow control is off); removing that series leaves the gauge out of the scrape, as a labelled one is.
 */
function forgetting(gauge: Gauge<string>, labels: number): { reset(): void } {
  return {
    reset: () => {
      gauge.reset();
      if (labels === 0) gauge.remove({});
    },
  };
}
