import type { MaybePromise } from './store.js';

/**
 * A store call that did not answer within the budget's `timeoutMs`; carried by the `degraded` event.
 *
 * @example
 * budget.events.on('degraded', (e) => { if (e.error instanceof StoreTimeoutError) log.warn('Redis is slow') });
 */
export class StoreTimeoutError extends Error {
  override name = 'StoreTimeoutError';
}

/**
 * `value` as a promise that settles within `ms`: a synchronous value passes straight through (no timer, no
 * allocation on the in-process hot path); a promise is raced against a timer that rejects with a
 * {@link StoreTimeoutError}. A late rejection of the original promise is swallowed, never unhandled.
 */
export function bounded<T>(value: MaybePromise<T>, ms: number, what: string): MaybePromise<T> {
  if (!isThenable(value)) return value;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new StoreTimeoutError(`${what} did not answer within ${ms}ms`)),
      ms,
    );
    // The caller waits on the promise, not on the timer: the timer alone must not keep a process alive.
    timer.unref();
    value.then(
      (result) => {
        clearTimeout(timer);
        resolve(result);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

function isThenable<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
