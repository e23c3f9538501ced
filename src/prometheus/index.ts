/**
 * stormguard/prometheus: Prometheus metrics for stormguard on prom-client, a `/metrics` handler and a
 * tiny server. The rules file and the Grafana dashboard ship beside it
 * (`stormguard/src/prometheus/rules/stormguard.rules.yml`, `stormguard/src/prometheus/dashboards/stormguard.json`).
 *
 * @example
 * import { createMetrics, serveMetrics } from 'stormguard/prometheus';
 * const metrics = createMetrics();
 * metrics.observeWorker(worker);
 * await serveMetrics({ port: 9464 });
 */

export type { ObserveBudgetOptions } from '../metrics/budget-observer.js';
export {
  DEFAULT_PREFIX,
  JOB_ATTEMPT_BUCKETS,
  METRICS,
  type MetricDefinition,
  type MetricType,
  metricNames,
  prometheusNameOf,
  RETRY_DELAY_BUCKETS_SECONDS,
} from '../metrics/catalog.js';
export type { ObserveFlowOptions } from '../metrics/flow-store-observer.js';
export { MISSING_LABEL_VALUE, OVERFLOW_LABEL_VALUE } from '../metrics/labels.js';
export type { ObserverOptions, Observers } from '../metrics/observers.js';
export type {
  BreakerStateEvents,
  BreakerStateName,
  ObservableBreaker,
  ObservableBudget,
  ObservableDeadLetterQueue,
  ObservableFlowStore,
  ObservableLimitStore,
  ObservableWorker,
  ObservedBudgetState,
  Subscribable,
} from '../metrics/sources.js';
export { type ListableBreakerStore, readOnlyBreaker, readOnlyBudget } from '../metrics/store-views.js';
export { createMetrics, type MetricsOptions, type StormguardMetrics } from './create-metrics.js';
export {
  type MetricsHandlerOptions,
  type MetricsServer,
  metricsHandler,
  type ServeMetricsOptions,
  serveMetrics,
} from './http.js';
