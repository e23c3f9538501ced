import { InvalidInputError } from '../errors/invalid-input-error.js';
import { isCluster, type RedisClient, type ScriptSpec } from './scripts.js';

/**
 * How a store makes a critical write (a dead-letter record, an idempotency outcome) survive a failover:
 * the write and a `WAIT <replicas> <timeoutMs>` go to the key's master in one round trip, and the write
 * counts as done only once that many replicas acknowledged it.
 *
 * @example
 * const durable: DurableWrites = { replicas: 1, timeoutMs: 1_000 };
 */
export interface DurableWrites {
  /** Replicas that must acknowledge the write. Default 1. */
  replicas: number;
  /** How long to wait for them, ms; the write is then reported as not durable. Default 1 000. */
  timeoutMs: number;
}

/**
 * The `durableWrites` option of the Redis dead-letter and idempotency stores: `true` waits for one replica
 * for up to a second, an object sets either figure, `false` never waits. Default: `true` on a Redis Cluster
 * client (which fails over to a replica), `false` on a single Redis (often without replicas).
 *
 * @example
 * new RedisDeadLetterStore({ redis: cluster, durableWrites: { replicas: 1, timeoutMs: 500 } });
 */
export type DurableWritesOption = boolean | Partial<DurableWrites>;

const DEFAULTS: DurableWrites = { replicas: 1, timeoutMs: 1_000 };

/**
 * What `option` asks of writes on `redis`, or `undefined` when they need not wait.
 *
 * @example
 * resolveDurableWrites(cluster, undefined); // { replicas: 1, timeoutMs: 1000 }
 * resolveDurableWrites(redis, undefined); // undefined
 */
export function resolveDurableWrites(
  redis: RedisClient,
  option: DurableWritesOption | undefined,
): DurableWrites | undefined {
  const wanted = option ?? isCluster(redis);
  if (wanted === false) return undefined;
  const resolved = { ...DEFAULTS, ...(wanted === true ? {} : wanted) };
  for (const [field, min] of [
    ['replicas', 1],
    ['timeoutMs', 1],
  ] as const) {
    const value = resolved[field];
    if (!Number.isSafeInteger(value) || value < min)
      throw new InvalidInputError(
        `durableWrites.${field}: ${JSON.stringify(value)} is invalid: must be a whole number >= ${min} (or set durableWrites: false)`,
      );
  }
  return resolved;
}

/**
 * Runs the script `spec` (registered on `redis` by `defineScript`) on `keys` and `args`, followed by
 * `WAIT` in the same pipeline: one round trip, on the connection to the master of the keys' slot, so WAIT
 * covers exactly this write. Resolves with the script's reply once `durable.replicas` replicas have it;
 * rejects when fewer acknowledged it within `durable.timeoutMs` (the write stays on the master, which may
 * lose it in a failover: the caller's retry rewrites it, and the stores' writes are idempotent).
 *
 * @example
 * const reply = await runDurably(redis, SCRIPTS.finish, [key], [token, value, ttlMs], { replicas: 1, timeoutMs: 1_000 });
 */
export async function runDurably(
  redis: RedisClient,
  spec: ScriptSpec,
  keys: readonly string[],
  args: readonly (string | number)[],
  durable: DurableWrites,
): Promise<unknown> {
  const pipeline = redis.pipeline() as unknown as Record<string, (...a: (string | number)[]) => unknown> & {
    wait(replicas: number, timeoutMs: number): unknown;
    exec(): Promise<[Error | null, unknown][] | null>;
  };
  const write = pipeline[spec.command];
  if (typeof write !== 'function') throw new Error(`script ${spec.command} is not defined on this client`);
  write.call(pipeline, ...keys, ...args);
  pipeline.wait(durable.replicas, durable.timeoutMs);
  const replies = await pipeline.exec();
  const [[writeError, reply] = [null, undefined], [waitError, acks] = [null, 0]] = replies ?? [];
  if (writeError) throw writeError;
  if (waitError) throw waitError;
  if (Number(acks) < durable.replicas)
    throw new Error(
      `write to ${keys[0]} reached ${Number(acks)} of ${durable.replicas} replica(s) within ${durable.timeoutMs}ms, so a failover could lose it; ` +
        'check that the master has a replica in sync, or set durableWrites: false on a Redis without replicas',
    );
  return reply;
}
