/**
 * The shared store a component reports about: the retry budget's or the circuit breaker's.
 *
 * @example
 * const store: StoreKind = 'budget';
 */
export type StoreKind = 'budget' | 'breaker';

/**
 * The one shape of a "store unreachable" event (`degraded` on a `RetryBudget` or a `CircuitBreaker`): which
 * store, the dependency it concerns (a breaker's store is asked per dependency; a budget's goes down for
 * all of them, and names the dependency whose call found it down), the store's error when the component
 * saw one, and since when (the component's clock, epoch ms).
 *
 * @example
 * budget.events.on('degraded', (e: StoreDownEvent) => log.warn(`${e.store} store down since ${e.since}`, e.error));
 */
export interface StoreDownEvent {
  store: StoreKind;
  dependency?: string;
  error?: unknown;
  /** When the store was found unreachable (the component's clock, epoch ms). */
  since: number;
}

/**
 * The one shape of a "store answers again" event (`recovered` on a `RetryBudget` or a `CircuitBreaker`):
 * the outage's {@link StoreDownEvent} fields without the error, and how long it lasted.
 *
 * @example
 * breaker.events.on('recovered', (e: StoreUpEvent) => log.info(`${e.store} store back after ${e.downForMs} ms`));
 */
export interface StoreUpEvent {
  store: StoreKind;
  dependency?: string;
  /** When the outage began (the component's clock, epoch ms). */
  since: number;
  downForMs: number;
}
