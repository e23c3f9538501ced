/**
 * Resolves or rejects as `work` does, or rejects after `ms` with an error naming `what`: a scrape must
 * answer within Prometheus's scrape timeout even when Redis does not.
 */
export async function withTimeout<T>(work: Promise<T> | T, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${Math.round(ms)}ms`)), ms);
    timer.unref?.();
  });
  try {
    return await Promise.race([Promise.resolve(work), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
