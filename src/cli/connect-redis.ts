import { Redis } from 'ioredis';
import { InvalidInputError } from '../errors/invalid-input-error.js';

/**
 * Connects to Redis for a CLI command, failing fast with a one-line error when it is not there (a CLI must
 * not hang retrying), and checking the URL first (a bad one is bad input: exit 2). The caller disconnects.
 *
 * @example
 * const redis = await connectRedis('redis://127.0.0.1:6379');
 */
export async function connectRedis(url: string): Promise<Redis> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError(`--redis: "${url}" is not a URL; write it like redis://127.0.0.1:6379`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')
    throw new InvalidInputError(`--redis: "${url}" must start with redis:// or rediss://`);
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    throw new Error(
      `cannot reach Redis at ${url}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return redis;
}
