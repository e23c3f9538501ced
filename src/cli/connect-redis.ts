import type { Cluster, Redis } from 'ioredis';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { RedisClient } from '../redis/scripts.js';
import { type ClusterSeed, clusterSeedOf, parseRedisTarget } from './redis-target.js';
import type { RedisUrl } from './redis-url.js';

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
 * not hang retrying), and checking the value first (a bad one is bad input: exit 2, see `parseRedisTarget`).
 * The value is one URL, or a Redis Cluster as comma-separated node URLs; a single URL that turns out to
 * name a cluster node (`cluster_enabled:1`) is used as the seed of a cluster client, so either way the
 * commands see every master. A database the server does not have is bad input too: ioredis alone would
 * report it as an error event and go on in database 0. The caller disconnects.
 * ioredis is loaded here, on first use, so commands that never touch Redis start without it.
 *
 * @example
 * const redis = await connectRedis('redis://127.0.0.1:6379');
 * const cluster = await connectRedis('redis://10.0.0.5:7000,redis://10.0.0.6:7000');
 * const exporterRedis = await connectRedis(url, { longRunning: true, commandTimeoutMs: 1000 });
 */
export async function connectRedis(url: string, options: ConnectRedisOptions = {}): Promise<RedisClient> {
  const target = parseRedisTarget(url);
  if (target.kind === 'cluster') return connectCluster(target, options);
  const redis = await connectSingle(target.url, options);
  // A user whose ACL denies INFO gets a single-node connection, as before cluster support.
  const info = await redis.info('cluster').catch(() => '');
  if (!/^cluster_enabled:1\b/m.test(info)) return redis;
  redis.disconnect();
  return connectCluster(clusterSeedOf([new URL(target.url.url)], target.url.shown), options);
}

async function connectSingle(target: RedisUrl, options: ConnectRedisOptions): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(target.url, {
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
    if (isDatabaseRefusal(lastError ?? error)) throw noSuchDatabase(target.shown, target.database);
    throw new Error(`cannot reach Redis at ${target.shown}: ${errorMessage(lastError ?? error)}`);
  }
  if (target.database > 0) {
    // ioredis selects the database while connecting but only reports a refusal as an 'error' event;
    // selecting it again here turns the refusal into an answer this command can act on.
    try {
      await redis.select(target.database);
    } catch (error) {
      redis.disconnect();
      if (isDatabaseRefusal(error)) throw noSuchDatabase(target.shown, target.database);
      throw new Error(`cannot use Redis at ${target.shown}: ${errorMessage(error)}`);
    }
  }
  return redis;
}

async function connectCluster(seed: ClusterSeed, options: ConnectRedisOptions): Promise<Cluster> {
  const { Cluster } = await import('ioredis');
  const cluster = new Cluster(seed.nodes, {
    lazyConnect: true,
    // A one-shot command gives up when no seed answers; a long-running one keeps trying, backing off.
    clusterRetryStrategy: options.longRunning ? (times: number) => Math.min(times * 200, 2_000) : () => null,
    redisOptions: {
      maxRetriesPerRequest: 1,
      ...(seed.username ? { username: seed.username } : {}),
      ...(seed.password ? { password: seed.password } : {}),
      ...(seed.tls ? { tls: {} } : {}),
      ...(options.longRunning ? { commandTimeout: options.commandTimeoutMs ?? 2_000 } : {}),
    },
  });
  let lastError: unknown;
  cluster.on('error', (error) => {
    lastError = error;
  });
  try {
    await cluster.connect();
  } catch (error) {
    cluster.disconnect();
    throw new Error(`cannot reach Redis Cluster at ${seed.shown}: ${errorMessage(lastError ?? error)}`);
  }
  return cluster;
}

function isDatabaseRefusal(error: unknown): boolean {
  return /DB index is out of range|invalid DB index|SELECT is not allowed/i.test(errorMessage(error));
}

function noSuchDatabase(shown: string, database: number): InvalidInputError {
  return new InvalidInputError(
    `--redis: "${shown}": the server has no database ${database}; use one it has (0 to its "databases" setting minus 1; 0 on Redis Cluster)`,
  );
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
