import type { Clock } from '../common/clock.js';
import { dependencyTag, encodeKeyPart, globalKey } from '../common/keys.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import type { PaceVerdict } from '../runtime/flow-control/pacing.js';
import type { SlowStartRamp } from '../runtime/flow-control/slow-start.js';
import {
  byQueueThenWorker,
  type FlowSnapshot,
  type FlowStore,
  type PausedWorkerEntry,
} from '../runtime/flow-control/store.js';
import {
  checkHoldMs,
  checkLimitExchange,
  effectiveLimit,
  normalOverride,
} from '../runtime/limits/limit-maths.js';
import type {
  DependencyLimit,
  LimitExchange,
  LimitExchangeResult,
  LimitHold,
  LimitOverride,
  LimitState,
  LimitStore,
} from '../runtime/limits/store.js';
import { assertPrefix, DEFAULT_PREFIX } from './budget-keys.js';
import { type RedisConnection, redisClientOf } from './connection.js';
import { DependencyRegistry } from './dependency-registry.js';
import { defineScript, type RedisClient } from './scripts.js';

/**
 * Options of {@link RedisFlowStore}.
 *
 * @example
 * const options: RedisFlowStoreOptions = { redis: new Redis(url), prefix: 'shop' };
 */
export interface RedisFlowStoreOptions {
  /**
   * Your ioredis client (a `Redis` or a `Cluster`), which the store never closes; or ioredis options
   * (`{ host, port }`) or a `redis://` URL, from which it opens a client of its own, closed by `close()`.
   */
  redis: RedisConnection;
  /** Key prefix, any 1-64 characters (encoded into keys). Default `stormguard`. */
  prefix?: string;
  /** How long a dependency's flow state outlives its last write, in ms. Default 24 hours. */
  stateTtlMs?: number;
  /** TEST ONLY: take time from this clock instead of the Redis server's `TIME`. */
  clock?: Clock;
}

const OPTION_NAMES = {
  redis: true,
  prefix: true,
  stateTtlMs: true,
  clock: true,
} as const satisfies OptionNames<RedisFlowStoreOptions>;

const DEFAULT_STATE_TTL_MS = 24 * 3_600_000;

/**
 * The fleet-wide {@link FlowStore} on Redis (ioredis). A dependency's state is one hash,
 * `{<prefix>:d:<dependency>}:flow`, beside its budget and breaker in one Redis Cluster slot, with its park
 * lists (`…:park:<queue>`), released marks (`…:released:<queue>`) and paused workers (`…:paused`, one hash
 * field per worker and queue, each with its own expiry); every operation is one script or
 * one command, one round trip, with time from the Redis server. The kill switch is one fleet-wide key,
 * `{<prefix>:g}:flow-off`. Everything expires on its own.
 *
 * A dependency's limits are three keys of the same slot (`…:limits`, a hash of the pacer, the hold, the
 * override and each process's declaration; `…:limit-leases`, a sorted set of leases by expiry;
 * `…:limit-costs`, their costs and total): one script call per exchange. Their names are listed in
 * `{<prefix>:g}:limits-dependencies` (noted about once a minute per dependency and process, beside the
 * script) for {@link RedisFlowStore.limitedDependencies}. They expire `stateTtlMs` after their last write,
 * or later while a hold or an override lasts (an override without an expiry keeps them until removed).
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { RedisFlowStore } from 'stormguard/redis';
 * const flowStore = new RedisFlowStore({ redis: new Redis(process.env.REDIS_URL) });
 */
export class RedisFlowStore implements FlowStore {
  readonly #closeClient: () => Promise<void>;
  readonly prefix: string;
  readonly #redis: RedisClient;
  readonly #clock: Clock | undefined;
  readonly #ttlMs: number;
  readonly #mark;
  readonly #admit;
  readonly #park;
  readonly #release;
  readonly #paused;
  readonly #exchange;
  readonly #set;
  readonly #readLimits;
  readonly #limitsRegistry: DependencyRegistry;

  constructor(options: RedisFlowStoreOptions) {
    checkOptionNames('RedisFlowStore', options, OPTION_NAMES);
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    assertPrefix(prefix);
    const { redis, close } = redisClientOf('RedisFlowStore', options.redis);
    this.#closeClient = close;
    this.prefix = prefix;
    this.#redis = redis;
    this.#clock = options.clock;
    this.#ttlMs = options.stateTtlMs ?? DEFAULT_STATE_TTL_MS;
    this.#mark = defineScript(redis, {
      command: 'stormguardFlowMarkV1',
      file: 'flow-mark-1.lua',
      numberOfKeys: 1,
    });
    this.#admit = defineScript(redis, {
      command: 'stormguardFlowAdmitV1',
      file: 'flow-admit-1.lua',
      numberOfKeys: 1,
    });
    this.#park = defineScript(redis, {
      command: 'stormguardFlowParkV1',
      file: 'flow-park-1.lua',
      numberOfKeys: 1,
    });
    this.#release = defineScript(redis, {
      command: 'stormguardFlowReleaseV1',
      file: 'flow-release-3.lua',
      numberOfKeys: 3,
    });
    this.#paused = defineScript(redis, {
      command: 'stormguardFlowPausedV1',
      file: 'flow-paused-1.lua',
      numberOfKeys: 1,
    });
    this.#exchange = defineScript(redis, {
      command: 'stormguardLimitsExchangeV1',
      file: 'limits-exchange-3.lua',
      numberOfKeys: 3,
    });
    this.#set = defineScript(redis, {
      command: 'stormguardLimitsSetV1',
      file: 'limits-set-3.lua',
      numberOfKeys: 3,
    });
    this.#readLimits = defineScript(redis, {
      command: 'stormguardLimitsReadV1',
      file: 'limits-read-3.lua',
      numberOfKeys: 3,
      readOnly: true,
    });
    this.#limitsRegistry = new DependencyRegistry({
      redis,
      prefix,
      kind: 'limits',
      ...(options.clock ? { clock: options.clock } : {}),
    });
  }

  /** Closes the client the store opened from options or a URL; a client you passed stays open. */
  async close(): Promise<void> {
    await this.#closeClient();
  }

  /** The key of a dependency's flow state. */
  keyOf(dependency: string): string {
    return `${dependencyTag(this.prefix, dependency)}:flow`;
  }

  async read(dependency: string): Promise<FlowSnapshot> {
    const [mark, off] = await Promise.all([this.#markAs(dependency, 'read'), this.#off()]);
    return snapshotOf(mark, off);
  }

  async markDown(dependency: string): Promise<void> {
    await this.#markAs(dependency, 'down');
  }

  async markUp(dependency: string): Promise<FlowSnapshot> {
    const [mark, off] = await Promise.all([this.#markAs(dependency, 'up'), this.#off()]);
    return snapshotOf(mark, off);
  }

  async admit(dependency: string, ramp: SlowStartRamp, maxWaitMs: number): Promise<PaceVerdict> {
    const reply = (await this.#admit(
      [this.keyOf(dependency)],
      [...rampArgs(ramp), maxWaitMs, this.#ttlMs, this.#now()],
    )) as [number, string, string];
    return { granted: reply[0] === 1, waitMs: Number(reply[1]), tatMs: Number(reply[2]) };
  }

  async park(dependency: string, queue: string, jobId: string, ttlMs: number): Promise<number> {
    return Number(
      await this.#park([this.#parkKey(dependency, queue)], [jobId, Math.max(1, Math.ceil(ttlMs))]),
    );
  }

  async release(
    dependency: string,
    queue: string,
    ramp: SlowStartRamp,
    max: number,
    horizonMs: number,
  ): Promise<string[]> {
    const tag = dependencyTag(this.prefix, dependency);
    const q = encodeKeyPart(queue);
    return (await this.#release(
      [`${tag}:flow`, `${tag}:park:${q}`, `${tag}:released:${q}`],
      [...rampArgs(ramp), max, horizonMs, this.#ttlMs, this.#now()],
    )) as string[];
  }

  async claimReleased(dependency: string, queue: string, jobId: string): Promise<boolean> {
    const key = `${dependencyTag(this.prefix, dependency)}:released:${encodeKeyPart(queue)}`;
    return (await this.#redis.srem(key, jobId)) === 1;
  }

  async parked(dependency: string, queue: string): Promise<number> {
    return this.#redis.llen(this.#parkKey(dependency, queue));
  }

  async notePaused(
    dependency: string,
    queue: string,
    worker: string,
    forMs: number,
    ttlMs: number,
  ): Promise<void> {
    await this.#paused(
      [this.#pausedKey(dependency)],
      ['note', JSON.stringify([queue, worker]), wholeMs(forMs, 0), wholeMs(ttlMs, 1), this.#now()],
    );
  }

  async clearPaused(dependency: string, queue: string, worker: string): Promise<void> {
    await this.#paused(
      [this.#pausedKey(dependency)],
      ['clear', JSON.stringify([queue, worker]), 0, 1, this.#now()],
    );
  }

  async pausedWorkers(dependency: string): Promise<PausedWorkerEntry[]> {
    const reply = (await this.#paused(
      [this.#pausedKey(dependency)],
      ['list', '', 0, 1, this.#now()],
    )) as string[];
    const entries: PausedWorkerEntry[] = [];
    for (let i = 0; i + 3 < reply.length; i += 4) {
      const [queue, worker] = JSON.parse(reply[i]!) as [string, string];
      entries.push({
        queue,
        worker,
        sinceMs: Number(reply[i + 1]),
        untilMs: Number(reply[i + 2]),
        expiresAtMs: Number(reply[i + 3]),
      });
    }
    return entries.sort(byQueueThenWorker);
  }

  async exchangeLimits(dependency: string, request: LimitExchange): Promise<LimitExchangeResult> {
    checkLimitExchange(request);
    const args: (string | number)[] = [
      this.#now(),
      request.holder,
      request.leaseMs,
      request.declared.maxInFlight ?? '',
      request.declared.maxRatePerSecond ?? '',
      request.probes,
      request.ramp.slowStartMs,
      request.ramp.floorPerSecond,
      this.#ttlMs,
      request.give.length,
      request.renew.length,
    ];
    for (const { lease, ok } of request.give) args.push(lease, ok ? '1' : '0');
    args.push(...request.renew);
    for (const { lease, cost } of request.take) args.push(lease, cost);
    // The registry note (one command, about once a minute per dependency) travels with the script.
    const [, reply] = (await Promise.all([
      this.#limitsRegistry.note(dependency),
      this.#exchange(this.#limitKeys(dependency), args),
    ])) as [unknown, (string | number)[]];
    const result: LimitExchangeResult = {
      granted: Number(reply[0]),
      waitMs: Number(reply[1]),
      state: limitStateOf(dependency, reply.slice(3)),
    };
    if (reply[2] !== '') result.refusedBy = reply[2] as LimitExchangeResult['refusedBy'];
    return result;
  }

  async holdLimits(dependency: string, forMs: number, reason: LimitHold['reason']): Promise<LimitState> {
    checkHoldMs(forMs);
    return this.#setLimits(dependency, ['hold', forMs, reason]);
  }

  async overrideLimits(
    dependency: string,
    override: Parameters<LimitStore['overrideLimits']>[1],
    options: { clearHold?: boolean } = {},
  ): Promise<LimitState> {
    const fields = override && normalOverride(override);
    return this.#setLimits(dependency, [
      'override',
      fields ? JSON.stringify(fields) : '',
      override?.expiresInMs ?? '',
      options.clearHold === true ? '1' : '0',
    ]);
  }

  async limitState(dependency: string): Promise<LimitState> {
    const reply = (await this.#readLimits(this.#limitKeys(dependency), [this.#now()])) as (string | number)[];
    return limitStateOf(dependency, reply);
  }

  /**
   * The dependencies with live limits state: the names in the store's limits registry
   * (`{<prefix>:g}:limits-dependencies`, see src/redis/dependency-registry.ts), then one read per
   * dependency, so its cost follows the number of dependencies, never the size of the keyspace.
   */
  async limitedDependencies(): Promise<string[]> {
    const names = await this.#limitsRegistry.names();
    const replies = (await Promise.all(
      names.map((name) => this.#readLimits(this.#limitKeys(name), [this.#now()])),
    )) as (string | number)[][];
    const live = replies.map((reply) => reply[LIVE] === 1);
    await this.#limitsRegistry.forget(names.filter((_, i) => !live[i]));
    return names.filter((_, i) => live[i]);
  }

  async #setLimits(dependency: string, op: (string | number)[]): Promise<LimitState> {
    const [, reply] = (await Promise.all([
      this.#limitsRegistry.note(dependency),
      this.#set(this.#limitKeys(dependency), [this.#now(), this.#ttlMs, ...op]),
    ])) as [unknown, (string | number)[]];
    return limitStateOf(dependency, reply);
  }

  /** A dependency's limits keys, in the order the limits scripts take them. */
  #limitKeys(dependency: string): string[] {
    const tag = dependencyTag(this.prefix, dependency);
    return [`${tag}:limits`, `${tag}:limit-leases`, `${tag}:limit-costs`];
  }

  switchedOff(): Promise<boolean> {
    return this.#off();
  }

  async setOff(off: boolean): Promise<void> {
    const key = globalKey(this.prefix, 'flow-off');
    if (off) await this.#redis.set(key, '1');
    else await this.#redis.del(key);
  }

  #pausedKey(dependency: string): string {
    return `${dependencyTag(this.prefix, dependency)}:paused`;
  }

  #parkKey(dependency: string, queue: string): string {
    return `${dependencyTag(this.prefix, dependency)}:park:${encodeKeyPart(queue)}`;
  }

  async #markAs(dependency: string, op: 'down' | 'up' | 'read'): Promise<[number, string, number]> {
    return (await this.#mark([this.keyOf(dependency)], [op, this.#ttlMs, this.#now()])) as [
      number,
      string,
      number,
    ];
  }

  async #off(): Promise<boolean> {
    return (await this.#redis.get(globalKey(this.prefix, 'flow-off'))) === '1';
  }

  #now(): string {
    return this.#clock ? String(this.#clock.now()) : '';
  }
}

/** A duration as the scripts take it: whole ms, at least `min`. */
function wholeMs(ms: number, min: number): number {
  return Math.max(min, Math.ceil(ms));
}

function rampArgs(ramp: SlowStartRamp): (string | number)[] {
  return [ramp.slowStartMs, ramp.floorPerSecond, ramp.maxRatePerSecond ?? ''];
}

function snapshotOf([down, rec, now]: [number, string, number], off: boolean): FlowSnapshot {
  const snapshot: FlowSnapshot = { down: down === 1, nowMs: Number(now), off };
  if (rec !== '') snapshot.recoveredAtMs = Number(rec);
  return snapshot;
}

// Where limitsReply (src/redis/lua/includes/limits.lua) says that anything of the dependency lives.
const LIVE = 10;

/** A {@link LimitState} from the state part of a limits script's reply (see limitsReply). */
function limitStateOf(dependency: string, reply: readonly (string | number)[]): LimitState {
  const [nowMs, inFlight, maxInFlight, maxRate, override, setAt, expiresAt, hold, probing, rec] = reply;
  const declared: DependencyLimit = {};
  if (maxInFlight !== '') declared.maxInFlight = Number(maxInFlight);
  if (maxRate !== '') declared.maxRatePerSecond = Number(maxRate);
  const state: LimitState = {
    dependency,
    nowMs: Number(nowMs),
    inFlight: Number(inFlight),
    declared,
    effective: { ...declared },
    probing: probing === 1,
  };
  if (override !== '') {
    state.override = { ...(JSON.parse(String(override)) as LimitOverride), setAtMs: Number(setAt) };
    if (expiresAt !== '') state.override.expiresAtMs = Number(expiresAt);
    state.effective = effectiveLimit(declared, state.override);
  }
  if (hold !== '') {
    const [untilMs, setAtMs, reason] = String(hold).split(' ', 3);
    state.hold = {
      untilMs: Number(untilMs),
      setAtMs: Number(setAtMs),
      reason: reason as LimitHold['reason'],
    };
  }
  if (rec !== '') state.recoveredAtMs = Number(rec);
  return state;
}
