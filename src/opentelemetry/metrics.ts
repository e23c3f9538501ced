import {
  type Attributes,
  type BatchObservableCallback,
  type MeterProvider,
  metrics,
  type Observable,
} from '@opentelemetry/api';
import {
  JOB_ATTEMPT_BUCKETS,
  METRICS,
  type MetricKey,
  RETRY_DELAY_BUCKETS_SECONDS,
} from '../metrics/catalog.js';
import type { MetricInstruments, MetricLabels, SettingInstrument } from '../metrics/context.js';
import {
  createObservers,
  type ObserverOptions,
  type Observers,
  resolveObserverOptions,
} from '../metrics/observers.js';
import { ScrapeCoordinator } from '../metrics/scrape.js';
import { INSTRUMENTATION_NAME } from './tracing.js';

/**
 * Options of {@link openTelemetryMetrics}; every one has a default.
 *
 * @example
 * openTelemetryMetrics({ meterProvider, maxLabelValues: 50 });
 */
export interface OpenTelemetryMetricsOptions extends ObserverOptions {
  /** Where the instruments are made. Default: the global meter provider. */
  meterProvider?: MeterProvider;
  /** Bucket boundaries advised for `stormguard.retry.delay`, in seconds. Default 0.1 s … 1 h, as for Prometheus. */
  retryDelayBuckets?: readonly number[];
}

/**
 * stormguard's metrics through an OpenTelemetry meter. The same instruments, counted by the same observers,
 * as the Prometheus exporter (`stormguard/prometheus`), named by OpenTelemetry's rules
 * (`stormguard.retries`, `stormguard.retry.delay` in `s`…; `METRICS[key].otel`); a collector exporting them
 * to Prometheus gives them the Prometheus exporter's names back. Fleet-wide state (budget allowance, breaker
 * state, dead-letter depth) is read from the stores once per collection, in one batch callback.
 *
 * @example
 * import { openTelemetryMetrics } from 'stormguard/opentelemetry';
 * const otelMetrics = openTelemetryMetrics(); // the global meter provider
 * otelMetrics.observeWorker(worker);
 * otelMetrics.observeBudget(budget);
 * otelMetrics.observeBreaker(breaker);
 * process.on('SIGTERM', () => otelMetrics.dispose());
 */
export function openTelemetryMetrics(options: OpenTelemetryMetricsOptions = {}): Observers {
  const resolved = resolveObserverOptions(options, 'otel metrics');
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(INSTRUMENTATION_NAME);
  const gauges: GaugeCells[] = [];
  const instruments: Partial<Record<MetricKey, unknown>> = {};
  for (const [key, def] of Object.entries(METRICS) as [MetricKey, (typeof METRICS)[MetricKey]][]) {
    const { name, unit } = def.otel;
    const description = def.help;
    if (def.type === 'counter') {
      const counter = meter.createCounter(name, { description, unit });
      instruments[key] = { inc: (labels: MetricLabels) => counter.add(1, labels) };
    } else if (def.type === 'histogram') {
      const buckets =
        key === 'retryDelay'
          ? (options.retryDelayBuckets ?? RETRY_DELAY_BUCKETS_SECONDS)
          : JOB_ATTEMPT_BUCKETS;
      const histogram = meter.createHistogram(name, {
        description,
        unit,
        advice: { explicitBucketBoundaries: [...buckets] },
      });
      instruments[key] = {
        observe: (labels: MetricLabels, value: number) => histogram.record(value, labels),
      };
    } else {
      const cells = new GaugeCells(meter.createObservableGauge(name, { description, unit }));
      gauges.push(cells);
      instruments[key] = cells;
    }
  }
  const scrape = new ScrapeCoordinator(() => gauges);
  // One read of every store per collection, however many gauges show its figures.
  const collect: BatchObservableCallback = async (result) => {
    await scrape.collect();
    for (const cells of gauges) cells.report(result);
  };
  const observables = gauges.map((cells) => cells.observable);
  meter.addBatchObservableCallback(collect, observables);
  const observers = createObservers(instruments as MetricInstruments, scrape, resolved);
  return {
    ...observers,
    dispose: () => {
      observers.dispose();
      meter.removeBatchObservableCallback(collect, observables);
    },
  };
}

/** A gauge's values of the current read, by label set, reported when the meter collects. */
class GaugeCells implements SettingInstrument {
  readonly #values = new Map<string, { attributes: Attributes; value: number }>();

  constructor(readonly observable: Observable) {}

  set(labels: MetricLabels, value: number): void {
    this.#values.set(labelKey(labels), { attributes: { ...labels }, value });
  }

  reset(): void {
    this.#values.clear();
  }

  report(result: { observe(observable: Observable, value: number, attributes?: Attributes): void }): void {
    for (const { attributes, value } of this.#values.values())
      result.observe(this.observable, value, attributes);
  }
}

function labelKey(labels: MetricLabels): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
}
