/**
 * A store call (or another read of a server) that did not answer within its time limit: the budget's
 * `timeoutMs`, a shared breaker store's, a metrics read's. Carried by the `degraded` events.
 *
 * @example
 * budget.events.on('degraded', (e) => { if (e.error instanceof StoreTimeoutError) log.warn('Redis is slow') });
 */
export class StoreTimeoutError extends Error {
  override name = 'StoreTimeoutError';
}

/**
 * `work` bounded to `ms`: it settles as `work` does, or rejects after `ms` with a {@link StoreTimeoutError}
 * naming `what` (`<what> did not answer within <ms>ms`). A synchronous value passes straight through (no
 * timer, no allocation on an in-process hot path). The timer never keeps the process alive, and work
 * abandoned by the timeout may still reject later without becoming an unhandled rejection.
 *
 * @example
 * const rows = await withTimeout(pool.query(sql), 500, 'PostgreSQL');
 */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T>;
export function withTimeout<T>(work: T | Promise<T>, ms: number, what: string): T | Promise<T>;
export function withTimeout<T>(work: T | Promise<T>, ms: number, what: string): T | Promise<T> {
  if (!isThenable(work)) return work;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new StoreTimeoutError(`${what} did not answer within ${Math.round(ms)}ms`)),
      ms,
    );
    // The caller waits on the promise, not on the timer: the timer alone must not keep a process alive.
    timer.unref?.();
    work.then(
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

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
