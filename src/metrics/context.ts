import type { METRICS, MetricKey, MetricType } from './catalog.js';
import type { LabelBounds } from './labels.js';
import type { ScrapeCoordinator } from './scrape.js';

/** Label name → value, as every observer passes them. */
export type MetricLabels = Record<string, string>;

/** A counter as observers move it (prom-client's `Counter`, or an OpenTelemetry counter behind an adapter). */
export interface CountingInstrument {
  inc(labels: MetricLabels): void;
}

/** A gauge set while the metrics are read; `reset` forgets the series of the previous read. */
export interface SettingInstrument {
  set(labels: MetricLabels, value: number): void;
  reset(): void;
}

/** A histogram as observers feed it. */
export interface ObservingInstrument {
  observe(labels: MetricLabels, value: number): void;
}

type InstrumentOf<T extends MetricType> = T extends 'counter'
  ? CountingInstrument
  : T extends 'gauge'
    ? SettingInstrument
    : ObservingInstrument;

/**
 * Every instrument of the catalogue, whatever client records it: the observers count through this, so the
 * Prometheus exporter and the OpenTelemetry meter count the same events the same way.
 */
export type MetricInstruments = { [K in MetricKey]: InstrumentOf<(typeof METRICS)[K]['type']> };

/** What every observer shares: the instruments, the label guard, the scrape pass and its time bound. */
export interface ObserverContext {
  readonly instruments: MetricInstruments;
  readonly bounds: LabelBounds;
  readonly scrape: ScrapeCoordinator;
  /** How long one scrape-time read may take before its figures are left out. */
  readonly readTimeoutMs: number;
  /** Told about scrape-time reads that failed (the scrape itself still answers). */
  readonly onError: (error: unknown) => void;
  /**
   * Dependencies any observer has seen (worker events, budget, breaker): scrape-time reads cover them
   * all, so a worker that has only seen successes still reports its dependency's budget and breaker.
   */
  readonly dependencies: Set<string>;
  /**
   * Event sources whose `replayed` events are counted, with how many observations share the one
   * subscription: a `DeadLetterQueue` may be passed both to `observeWorker` and to `observeDeadLetters`,
   * and each replay must count once for as long as either observation lives.
   */
  readonly replaySources: Map<object, { users: number; dispose(): void }>;
}

/** Adds `dependency` to the shared set unless its label has been bounded to something else. */
export function noteDependency(ctx: ObserverContext, dependency: string | undefined): string {
  const label = ctx.bounds.open('dependency', dependency);
  if (label === dependency) ctx.dependencies.add(dependency);
  return label;
}
