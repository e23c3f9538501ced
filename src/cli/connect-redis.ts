import type { Redis } from 'ioredis';
import { InvalidInputError } from '../errors/invalid-input-error.js';

/** How a CLI command's Redis connection behaves once it is up. */
export interface ConnectRedisOptions {
  /**
   * For commands that run until stopped (`metrics serve`, `budget watch`): after a drop the connection
   * reconnects on its own (backing off up to 2 s), and while Redis is away each command fails within
   * `commandTimeoutMs` instead of waiting, so the caller can report the error and try again later.
   * Default false: no reconnecting; a one-shot command fails as soon as Redis goes.
   */
  longRunning?: boolean;
  /** With `longRunning`, the longest one Redis command may take before it fails. Default 2000 ms. */
  commandTimeoutMs?: number;
}

/**
 * Connects to Redis for a CLI command, failing fast with a one-line error when it is not there (a CLI must
 * not hang retrying), and checking the URL first (a bad one is bad input: exit 2). The caller disconnects.
 * ioredis is loaded here, on first use, so commands that never touch Redis start without it.
 *
 * @example
 * const redis = await connectRedis('redis://127.0.0.1:6379');
 * const exporterRedis = await connectRedis(url, { longRunning: true, commandTimeoutMs: 1000 });
 */
export async function connectRedis(url: string, options: ConnectRedisOptions = {}): Promise<Redis> {
  assertRedisUrl(url);
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    ...(options.longRunning
      ? {
          retryStrategy: (times: number) => Math.min(times * 200, 2_000),
          commandTimeout: options.commandTimeoutMs ?? 2_000,
        }
      : { retryStrategy: () => null }),
  });
  // The 'error' event says why (ECONNREFUSED, ENOTFOUND); connect() itself only says the connection closed.
  let lastError: unknown;
  redis.on('error', (error) => {
    lastError = error;
  });
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    throw new Error(`cannot reach Redis at ${url}: ${errorMessage(lastError ?? error)}`);
  }
  return redis;
}

/** Rejects anything but a redis:// or rediss:// URL as bad input, naming the flag. */
function assertRedisUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError(`--redis: "${url}" is not a URL; write it like redis://127.0.0.1:6379`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')
    throw new InvalidInputError(`--redis: "${url}" must start with redis:// or rediss://`);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Connects like {@link connectRedis}, runs `work` with the connection, and disconnects whatever happens.
 *
 * @example
 * const rows = await withRedis(flags.redis, (redis) => budgetStatus(new RedisBudgetStore({ redis })));
 */
export async function withRedis<T>(
  url: string,
  work: (redis: Redis) => Promise<T>,
  options: ConnectRedisOptions = {},
): Promise<T> {
  const redis = await connectRedis(url, options);
  try {
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}
