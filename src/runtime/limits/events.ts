import type { LimitState } from './store.js';

/**
 * Why a call or a job met a dependency's limit: an operator paused the dependency (`paused`), a
 * Retry-After hold is on it (`hold`), its `maxInFlight` slots were all taken (`in-flight`), or its
 * `maxRatePerSecond` pacer had no slot yet (`rate`). The store's `refusedBy`.
 *
 * @example
 * const by: LimitRefusal = 'in-flight';
 */
export type LimitRefusal = 'paused' | 'hold' | 'in-flight' | 'rate';

/**
 * What limits tell about, as worker events; metrics, logs and the console subscribe.
 *
 * - `limit-wait`: a call (`ctx.call`) or a job (before it started) met a limit. `granted`: it got its slot
 *   after waiting `waitedMs` in the worker; `held`: it waited `waitedMs` (up to `maxPaceWaitMs`) and was
 *   then held without using an attempt: the queue paused, or the job delayed. `by` is the first refusal.
 * - `limit-hold`: this worker recorded a fleet-wide hold on the dependency after a 429 or 503 with
 *   Retry-After: no call starts anywhere for `forMs`. `capped`: the server asked for longer than the
 *   policy's `retryAfter.maxMs`, so the hold was cut there (and the dependency was marked down, as an open
 *   breaker marks it).
 *
 * @example
 * worker.events.on('limit-wait', (e) => log.info(`${e.dependency}: ${e.outcome} after ${e.waitedMs} ms (${e.by})`));
 * worker.events.on('limit-hold', (e) => log.warn(`${e.dependency}: held ${e.forMs} ms (${e.reason})`));
 */
export interface LimitEvents {
  'limit-wait': {
    queue: string;
    dependency: string;
    by: LimitRefusal;
    waitedMs: number;
    outcome: 'granted' | 'held';
  };
  'limit-hold': {
    queue: string;
    dependency: string;
    forMs: number;
    reason: 'retry-after';
    capped: boolean;
  };
}

/**
 * A dependency as one worker's limits see it, for gauges: the cost units this process holds in flight
 * now (slots taken and not given back), and the fleet's state as last read (from the last exchange with
 * the store or the last state read; `undefined` before the first).
 *
 * @example
 * const status: LimitDependencyStatus = { dependency: 'openai', inFlight: 3, waiting: 0, state };
 */
export interface LimitDependencyStatus {
  dependency: string;
  /** Cost units this process holds in flight for the dependency. */
  inFlight: number;
  /** Calls (and jobs before they start) of this process waiting for a slot now. */
  waiting: number;
  /** The fleet's limits state as this worker last read it (store time in `state.nowMs`). */
  state?: LimitState | undefined;
  /** Local time (the worker's clock) when `state` was read. */
  readAtMs?: number | undefined;
}
