import { DEFAULT_PREFIX, encodeKeyPart, globalKey } from '../common/keys.js';
import { assertPrefix } from '../common/names.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import {
  isStartedAndOpen,
  REPLAY_RUNS_KEPT,
  type ReplayRun,
  type ReplayRunStore,
} from '../runtime/replay-runs.js';
import { type RedisConnection, redisClientOf } from './connection.js';
import { defineScript, type RedisClient } from './scripts.js';

const UPDATE = {
  command: 'stormguardReplayRunUpdateV1',
  file: 'replay-run-update-1.lua',
  numberOfKeys: 1,
} as const;
const PRUNE = {
  command: 'stormguardReplayRunPruneV1',
  file: 'replay-run-prune-3.lua',
  numberOfKeys: 3,
} as const;
const CHUNK = 1_000;

/**
 * Options of {@link RedisReplayRunStore}.
 *
 * @example
 * new RedisReplayRunStore({ redis, prefix: 'shop' });
 */
export interface RedisReplayRunStoreOptions {
  /**
   * Your ioredis client (a `Redis` or a `Cluster`), which the store never closes; or ioredis options
   * (`{ host, port }`) or a `redis://` URL, from which it opens a client of its own, closed by `close()`.
   */
  redis: RedisConnection;
  /** Key prefix, any 1-64 characters. Default `stormguard`. */
  prefix?: string;
}

const OPTION_NAMES = {
  redis: true,
  prefix: true,
} as const satisfies OptionNames<RedisReplayRunStoreOptions>;

/**
 * Replay runs on Redis, under the prefix's global tag (one slot, Cluster too): the run as JSON at
 * `{<prefix>:g}:replay-run:<id>`, its snapshot of record ids as a list beside it, the runs' index a
 * sorted set. An update is one script, a compare-and-set on the run's version.
 *
 * @example
 * import { RedisReplayRunStore } from 'stormguard/redis';
 * const runs = new RedisReplayRunStore({ redis });
 */
export class RedisReplayRunStore implements ReplayRunStore {
  readonly #closeClient: () => Promise<void>;
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #update: ReturnType<typeof defineScript>;
  readonly #prune: ReturnType<typeof defineScript>;

  constructor(options: RedisReplayRunStoreOptions) {
    checkOptionNames('RedisReplayRunStore', options, OPTION_NAMES);
    this.#prefix = options.prefix ?? DEFAULT_PREFIX;
    assertPrefix(this.#prefix);
    const { redis, close } = redisClientOf('RedisReplayRunStore', options.redis);
    this.#closeClient = close;
    this.#redis = redis;
    this.#update = defineScript(redis, UPDATE);
    this.#prune = defineScript(redis, PRUNE);
  }

  /** Closes the client the store opened from options or a URL; a client you passed stays open. */
  async close(): Promise<void> {
    await this.#closeClient();
  }

  #key(id: string): string {
    return `${globalKey(this.#prefix, 'replay-run')}:${encodeKeyPart(id)}`;
  }

  async createRun(run: Omit<ReplayRun, 'id' | 'version'>, recordIds: readonly string[]): Promise<ReplayRun> {
    const id = String(await this.#redis.incr(globalKey(this.#prefix, 'replay-run-seq')));
    const stored: ReplayRun = { ...run, id, version: 1 };
    // The ids first, the run last: a run that exists always has its whole snapshot.
    for (let i = 0; i < recordIds.length; i += CHUNK)
      await this.#redis.rpush(`${this.#key(id)}:ids`, ...recordIds.slice(i, i + CHUNK));
    if (isStartedAndOpen(stored)) await this.#redis.zadd(this.#startedKey, Number(id), id);
    await this.#redis.set(this.#key(id), versionFirst(stored));
    await this.#redis.zadd(globalKey(this.#prefix, 'replay-runs'), Number(id), id);
    await this.#pruneBefore(Number(id) - REPLAY_RUNS_KEPT);
    return stored;
  }

  /** Removes the runs with ids up to `lastId`, and their snapshots, except those started and open. */
  async #pruneBefore(lastId: number): Promise<void> {
    if (lastId < 1) return;
    const index = globalKey(this.#prefix, 'replay-runs');
    for (const old of await this.#redis.zrangebyscore(index, '-inf', String(lastId)))
      await this.#prune([this.#key(old), `${this.#key(old)}:ids`, index], [old]);
  }

  /** The ids of the runs started and not finished (a superset: an entry is dropped when read closed or gone). */
  get #startedKey(): string {
    return globalKey(this.#prefix, 'replay-runs-started');
  }

  async startedRuns(): Promise<ReplayRun[]> {
    const ids = await this.#redis.zrange(this.#startedKey, '0', '-1');
    const runs = await Promise.all(ids.map((id) => this.getRun(id)));
    const closed = ids.filter((_, i) => !(runs[i] && isStartedAndOpen(runs[i])));
    if (closed.length > 0) await this.#redis.zrem(this.#startedKey, ...closed);
    return runs.filter((r): r is ReplayRun => r !== undefined && isStartedAndOpen(r));
  }

  async getRun(id: string): Promise<ReplayRun | undefined> {
    const json = await this.#redis.get(this.#key(id));
    return json ? (JSON.parse(json) as ReplayRun) : undefined;
  }

  async listRuns(): Promise<ReplayRun[]> {
    const ids = await this.#redis.zrevrange(globalKey(this.#prefix, 'replay-runs'), 0, 99);
    const runs = await Promise.all(ids.map((id) => this.getRun(id)));
    return runs.filter((r): r is ReplayRun => r !== undefined);
  }

  async runRecordIds(id: string, from: number, count: number): Promise<string[]> {
    if (count <= 0) return [];
    return this.#redis.lrange(`${this.#key(id)}:ids`, from, from + count - 1);
  }

  async updateRun(run: ReplayRun): Promise<ReplayRun | undefined> {
    const next = { ...run, version: run.version + 1 };
    // Listed as started before it is written so (a crash in between leaves an entry `startedRuns` drops),
    // and no longer once it is written closed.
    const open = isStartedAndOpen(next);
    if (open) await this.#redis.zadd(this.#startedKey, Number(run.id), run.id);
    const written = await this.#update([this.#key(run.id)], [String(run.version), versionFirst(next)]);
    if (Number(written) !== 1) return undefined;
    if (!open) await this.#redis.zrem(this.#startedKey, run.id);
    return next;
  }
}

/** The run's JSON with `version` first, where the update script reads it (no later text can shadow it). */
function versionFirst({ version, ...rest }: ReplayRun): string {
  return JSON.stringify({ version, ...rest });
}
