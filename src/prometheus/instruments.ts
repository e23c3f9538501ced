import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { JOB_ATTEMPT_BUCKETS, METRICS, type MetricKey } from '../metrics/catalog.js';

type Kind<K extends MetricKey> = (typeof METRICS)[K]['type'];
type Instrument<K extends MetricKey> =
  Kind<K> extends 'counter' ? Counter<string> : Kind<K> extends 'gauge' ? Gauge<string> : Histogram<string>;

/** Every instrument of the catalogue, registered on one registry. */
export type Instruments = { [K in MetricKey]: Instrument<K> };

export interface InstrumentOptions {
  registry: Registry;
  prefix: string;
  retryDelayBuckets: readonly number[];
  /** Called by each scrape-time gauge before it is read; resolves once every store has been read. */
  collect: () => Promise<void>;
}

/**
 * Registers the catalogue's metrics on `registry`. Throws a clear error when they are registered there
 * already (two `createMetrics` on one registry would otherwise fail deep inside prom-client).
 */
export function createInstruments(options: InstrumentOptions): Instruments {
  const { registry, prefix } = options;
  for (const def of Object.values(METRICS)) {
    if (registry.getSingleMetric(`${prefix}${def.name}`))
      throw new InvalidInputError(
        `metrics: ${prefix}${def.name} is already registered in this registry; call createMetrics once per registry and share the result, or pass another registry or prefix`,
      );
  }
  const out: Partial<Record<MetricKey, Counter<string> | Gauge<string> | Histogram<string>>> = {};
  const collect = options.collect;
  for (const [key, def] of Object.entries(METRICS) as [MetricKey, (typeof METRICS)[MetricKey]][]) {
    const common = {
      name: `${prefix}${def.name}`,
      help: def.help,
      labelNames: [...def.labels],
      registers: [registry],
    };
    if (def.type === 'counter')
      out[key] = new Counter({
        ...common,
        // A counter moved by the scrape pass must wait for it, or the scrape shows the previous figure.
        ...(def.source === 'scrape' && { collect }),
      });
    else if (def.type === 'histogram')
      out[key] = new Histogram({
        ...common,
        buckets: [...(key === 'retryDelay' ? options.retryDelayBuckets : JOB_ATTEMPT_BUCKETS)],
      });
    else if (def.source === 'scrape') {
      out[key] = new Gauge({
        ...common,
        async collect() {
          await collect();
        },
      });
    } else out[key] = new Gauge(common);
  }
  return out as Instruments;
}

/** Removes the catalogue's metrics from `registry`. */
export function removeInstruments(registry: Registry, prefix: string): void {
  for (const def of Object.values(METRICS)) registry.removeSingleMetric(`${prefix}${def.name}`);
}
