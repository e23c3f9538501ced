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
 * for up to a second, an object sets either figure, `false` never waits. Default: on a Redis Cluster client
 * (which fails over to a replica), one replica for up to a second when the cluster has replicas, and no
 * waiting (said once, as a `StormguardWarning`) when it has none; off on a single Redis (often without
 * replicas). Set explicitly, it is kept to: with no replica to reach, every write is refused.
 *
 * @example
 * new RedisDeadLetterStore({ redis: cluster, durableWrites: { replicas: 1, timeoutMs: 500 } });
 */
export type DurableWritesOption = boolean | Partial<DurableWrites>;

const DEFAULTS: DurableWrites = { replicas: 1, timeoutMs: 1_000 };

/**
 * Durable writes as a store makes them: `ifReplicated` when they were not asked for but defaulted (on a
 * Cluster), so a deployment without any replica writes without waiting instead of failing every write.
 */
export type ResolvedDurableWrites = DurableWrites & { readonly ifReplicated?: true };

/**
 * What `option` asks of writes on `redis`, or `undefined` when they need not wait.
 *
 * @example
 * resolveDurableWrites(cluster, undefined); // { replicas: 1, timeoutMs: 1000, ifReplicated: true }
 * resolveDurableWrites(redis, undefined); // undefined
 */
export function resolveDurableWrites(
  redis: RedisClient,
  option: DurableWritesOption | undefined,
): ResolvedDurableWrites | undefined {
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
  return option === undefined ? { ...resolved, ifReplicated: true } : resolved;
}

/**
 * Runs the script `spec` (registered on `redis` by `defineScript`) on `keys` and `args`, followed by
 * `WAIT` in the same pipeline: one round trip, on the connection to the master of the keys' slot, so WAIT
 * covers exactly this write. Resolves with the script's reply once `durable.replicas` replicas have it;
 * rejects when fewer acknowledged it within `durable.timeoutMs` (the write stays on the master, which may
 * lose it in a failover: the caller's retry rewrites it, and the stores' writes are idempotent).
 *
 * With durable writes on by default (`ifReplicated`), a deployment with no replica at all (no master has
 * one) cannot fail over, and no write could ever reach one: that is found out once per client, at its
 * first durable write, said once (a `StormguardWarning`), and the writes then go without `WAIT` instead of
 * each waiting `timeoutMs` to fail.
 *
 * @example
 * const reply = await runDurably(redis, SCRIPTS.finish, [key], [token, value, ttlMs], { replicas: 1, timeoutMs: 1_000 });
 */
export async function runDurably(
  redis: RedisClient,
  spec: ScriptSpec,
  keys: readonly string[],
  args: readonly (string | number)[],
  durable: ResolvedDurableWrites,
): Promise<unknown> {
  if (durable.ifReplicated && (await replicasOf(redis)) === 0) return runPlain(redis, spec, keys, args);
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

/** Runs the script alone, with no WAIT after it (where no replica exists to wait for). */
async function runPlain(
  redis: RedisClient,
  spec: ScriptSpec,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  const write = (redis as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>)[
    spec.command
  ];
  if (typeof write !== 'function') throw new Error(`script ${spec.command} is not defined on this client`);
  return write.call(redis, ...keys, ...args);
}

/** Per client: the most replicas any master has (`undefined` when that could not be read). */
const replicaCounts = new WeakMap<RedisClient, Promise<number | undefined>>();

/**
 * The most replicas any master of `redis` has, read once per client (`CLUSTER NODES` on a Cluster,
 * `INFO replication` on a single Redis); on none, the warning is emitted then. `undefined` when it cannot
 * be read (a managed Redis may rename those commands): the writes then wait as configured, and a reply
 * that came back fails as before, naming the shortfall.
 */
function replicasOf(redis: RedisClient): Promise<number | undefined> {
  let known = replicaCounts.get(redis);
  if (!known) {
    known = countReplicas(redis).then(
      (count) => {
        if (count === 0) process.emitWarning(noReplicasWarning(redis), 'StormguardWarning');
        return count;
      },
      () => {
        replicaCounts.delete(redis); // read again at the next write
        return undefined;
      },
    );
    replicaCounts.set(redis, known);
  }
  return known;
}

async function countReplicas(redis: RedisClient): Promise<number> {
  if (!isCluster(redis)) {
    const info = String(await redis.info('replication'));
    const connected = /^connected_slaves:(\d+)/m.exec(info)?.[1];
    if (connected === undefined) throw new Error('INFO replication has no connected_slaves');
    return Number(connected);
  }
  const nodes = parseNodes(String(await redis.cluster('NODES')));
  const masters = nodes.filter((node) => node.flags.includes('master'));
  if (masters.length === 0) throw new Error('CLUSTER NODES lists no master');
  const replicas = (master: string) =>
    nodes.filter(
      (node) => node.master === master && !node.flags.includes('fail') && !node.flags.includes('master'),
    ).length;
  return Math.max(...masters.map((master) => replicas(master.id)));
}

/** `CLUSTER NODES`: one line per node, `<id> <address> <flags> <master id or -> …`. */
function parseNodes(text: string): { id: string; flags: string[]; master: string }[] {
  return text
    .split('\n')
    .map((line) => line.trim().split(' '))
    .filter((fields) => fields.length >= 4)
    .map(([id = '', , flags = '', master = '']) => ({ id, flags: flags.split(','), master }));
}

function noReplicasWarning(redis: RedisClient): string {
  const where = isCluster(redis)
    ? 'no master of this Redis Cluster has a replica'
    : 'this Redis has no replica';
  return (
    `durableWrites: ${where}, so there is nothing a failover could lose a write to and nothing to wait for: ` +
    'dead-letter records and idempotency outcomes are written without WAIT. Add replicas for durable writes, ' +
    'or set durableWrites: false on the stores to say that none are wanted.'
  );
}
