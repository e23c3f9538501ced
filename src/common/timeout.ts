/**
 * Resolves or rejects as `work` does, or rejects after `ms` with an error naming `what` (`<what> did not
 * answer within <ms>ms`). The timer never keeps the process alive, and work abandoned by the timeout may
 * still reject later without becoming an unhandled rejection.
 *
 * @example
 * const rows = await withTimeout(pool.query(sql), 500, 'PostgreSQL');
 */
export async function withTimeout<T>(work: Promise<T> | T, ms: number, what: string): Promise<T> {
  const pending = Promise.resolve(work);
  pending.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${Math.round(ms)}ms`)), ms);
    timer.unref?.();
  });
  try {
    return await Promise.race([pending, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
