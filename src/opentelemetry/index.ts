/**
 * stormguard/opentelemetry: every retry decision traced and measured with OpenTelemetry, built on
 * `@opentelemetry/api` alone (bring your own SDK). `openTelemetryTracing()` is a worker's `instrumentation`:
 * a span per attempt's decision, a child of BullMQ's own `process` span when the worker runs with
 * `bullmq-otel`, a span per `ctx.call`, links from each retry to the earlier attempts and from a replay to
 * the job it came from. `openTelemetryMetrics()` records the Prometheus exporter's metrics through a meter.
 * With no tracer provider registered, no span is made.
 *
 * @example
 * import { openTelemetryMetrics, openTelemetryTracing } from 'stormguard/opentelemetry';
 * const worker = createWorker('index', processor, { connection, policy, instrumentation: openTelemetryTracing() });
 * openTelemetryMetrics().observeWorker(worker);
 */

export type { ObserveBudgetOptions } from '../metrics/budget-observer.js';
export {
  METRICS,
  type MetricDefinition,
  type MetricType,
  prometheusNameOf,
} from '../metrics/catalog.js';
export type { ObserveFlowOptions } from '../metrics/flow-store-observer.js';
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
export { ATTR, type DecisionAttribute, type LinkAttribute } from './attributes.js';
export { type OpenTelemetryMetricsOptions, openTelemetryMetrics } from './metrics.js';
export { formatTraceparent, parseTraceparent } from './traceparent.js';
export {
  type ErrorText,
  INSTRUMENTATION_NAME,
  type OpenTelemetryTracingOptions,
  openTelemetryTracing,
} from './tracing.js';
