import { type Clock, systemClock } from '../common/clock.js';
import { globalKey } from '../common/keys.js';
import { type ScanOptions, scanKeys } from './scan.js';
import { defineScript, type RedisClient } from './scripts.js';

/**
 * How often one process tells the registry again that a dependency is in use. Between two notes a
 * dependency costs its writers one map lookup; the repeat heals a registry that was evicted or deleted,
 * and keeps each name's last-seen time well inside {@link FORGET_GRACE_MS}.
 */
export const NOTE_REFRESH_MS = 60_000;

/**
 * How long a name stays in the registry after it was last noted, even when a listing finds its state
 * gone: its writer may have noted it and not written yet, and will not note it again for up to
 * {@link NOTE_REFRESH_MS}. Much longer than that, so no live dependency is ever forgotten.
 */
export const FORGET_GRACE_MS = 3_600_000;

// Names per script call when adopting keys written before the registry existed.
const ADOPT_CHUNK = 1_000;

/**
 * Options of {@link DependencyRegistry}.
 *
 * @example
 * const options: DependencyRegistryOptions = {
 *   redis, prefix: 'shop', kind: 'budget',
 *   legacy: { pattern: budgetKeyPattern('shop'), dependencyOf: (key) => dependencyOfBudgetKey('shop', key) },
 * };
 */
export interface DependencyRegistryOptions {
  redis: RedisClient;
  /** The store's key prefix (already checked by the store). */
  prefix: string;
  /** Which store's dependencies: each store kind has a registry of its own. */
  kind: 'budget' | 'breaker' | 'limits';
  /**
   * How to find, once, the dependencies a store wrote before it kept a registry: a SCAN pattern and a key
   * decoder. Unset for a kind that always kept one: it never scans.
   */
  legacy?: { pattern: string; dependencyOf(key: string): string | undefined } | undefined;
  /** TEST ONLY: this clock's time instead of the Redis server's `TIME` (and for the refresh). Default unset. */
  clock?: Clock;
  /**
   * For readers (the status commands, the exporter): listings write nothing, neither the one-time
   * adoption's mark nor the pruning. Until a listing that may write records the mark, a read-only one scans
   * once per registry object and keeps what it found in memory. Default false.
   */
  readOnly?: boolean;
}

/**
 * The names of the dependencies one kind of Redis store (budgets, breakers) holds state for, in one small
 * sorted set, `{<prefix>:g}:<kind>-dependencies`, each scored by when a writer last saw it (server time),
 * so a listing reads one key instead of scanning a keyspace that also holds every job and dead letter.
 *
 * Writers {@link note} a dependency alongside their first write and again every {@link NOTE_REFRESH_MS};
 * in between it costs nothing. The set is bounded by the dependencies in use: a listing that finds a
 * name's state gone (expired, reset) removes it once nobody has noted it for {@link FORGET_GRACE_MS}.
 * The registry is its own command, never part of a state script, so every script keeps to its
 * dependency's slot on Redis Cluster; the registry lives in the prefix's global slot.
 *
 * Keys written before the registry existed are found by one SCAN, the first time a listing finds no
 * `{<prefix>:g}:<kind>-dependencies-scanned` mark; what it finds joins the registry and the mark is set,
 * so later listings never scan. A worker of an older version still running after that first listing (a
 * rolling upgrade) writes without noting: a dependency only it uses is listed once an upgraded worker
 * writes it too.
 *
 * @example
 * const registry = new DependencyRegistry({ redis, prefix: 'stormguard', kind: 'budget', legacy });
 * await Promise.all([registry.note('search'), writeState('search')]);
 * await registry.names(); // ['search']
 */
export class DependencyRegistry {
  readonly #redis: RedisClient;
  readonly #key: string;
  readonly #scannedKey: string;
  readonly #legacy: DependencyRegistryOptions['legacy'];
  readonly #clock: Clock | undefined;
  readonly #readOnly: boolean;
  // What a read-only registry's one scan found (it cannot record the mark that spares the next scan).
  #adoptedInMemory: string[] | undefined;
  readonly #note;
  readonly #forget;
  // When this process last sent a note for each dependency (its own clock: only the refresh uses it).
  readonly #notedAt = new Map<string, number>();

  constructor(options: DependencyRegistryOptions) {
    this.#redis = options.redis;
    this.#key = globalKey(options.prefix, `${options.kind}-dependencies`);
    this.#scannedKey = globalKey(options.prefix, `${options.kind}-dependencies-scanned`);
    this.#legacy = options.legacy;
    this.#clock = options.clock;
    this.#readOnly = options.readOnly === true;
    this.#note = defineScript(options.redis, {
      command: 'stormguardRegistryNoteV1',
      file: 'registry-note-1.lua',
      numberOfKeys: 1,
    });
    this.#forget = defineScript(options.redis, {
      command: 'stormguardRegistryForgetV1',
      file: 'registry-forget-1.lua',
      numberOfKeys: 1,
    });
  }

  /**
   * Records `dependency` in the registry, unless this process did so less than {@link NOTE_REFRESH_MS}
   * ago: then `undefined`, with no round trip. Send it with the state write (`Promise.all`), so the
   * name is on the server no later than the state on a single node. Never rejects: a note that fails
   * (its key corrupt, its Cluster node away) is sent again by the next call, and the state write it
   * travels with answers as it would alone, since that write has happened whatever became of the note.
   */
  note(dependency: string): Promise<void> | undefined {
    const nowMs = (this.#clock ?? systemClock).now();
    const last = this.#notedAt.get(dependency);
    if (last !== undefined && nowMs - last < NOTE_REFRESH_MS) return undefined;
    this.#notedAt.set(dependency, nowMs);
    return this.#note([this.#key], [this.#now(), dependency]).then(
      () => undefined,
      () => {
        if (this.#notedAt.get(dependency) === nowMs) this.#notedAt.delete(dependency);
      },
    );
  }

  /**
   * Every registered name, sorted by UTF-16 code units; the first listing under a prefix also adopts
   * the keys written before the registry existed (one SCAN; an aborted `signal` stops it). Some names
   * may have no state any more: the caller checks, and {@link forget}s those.
   */
  async names(options: ScanOptions = {}): Promise<string[]> {
    options.signal?.throwIfAborted();
    const scanning: Promise<number> = this.#redis.exists(this.#scannedKey);
    const registering: Promise<string[]> = this.#redis.zrange(this.#key, '0', '-1');
    const [scanned, registered] = await Promise.all([scanning, registering]).catch((error: unknown) => {
      throw this.#explained(error);
    });
    if (scanned === 1 || this.#legacy === undefined) return registered.sort();
    const names = new Set(registered);
    for (const name of this.#adoptedInMemory ?? (await this.#adopt(options))) names.add(name);
    return [...names].sort();
  }

  /**
   * Removes `names`, whose state a listing found gone, from the registry; a name noted within
   * {@link FORGET_GRACE_MS} stays. Best effort: a listing on a read-only connection (a replica) still
   * lists, and the names are tried again by the next one.
   */
  async forget(names: readonly string[]): Promise<void> {
    if (names.length === 0 || this.#readOnly) return;
    try {
      await this.#forget([this.#key], [this.#now(), FORGET_GRACE_MS, ...names]);
    } catch {
      // The listing is right without it; see above.
    }
  }

  /** The one-time scan for state written before the registry: its names join the registry, then the mark is set. */
  async #adopt(options: ScanOptions): Promise<string[]> {
    const names: string[] = [];
    const legacy = this.#legacy!;
    for (const key of await scanKeys(this.#redis, legacy.pattern, options)) {
      const name = legacy.dependencyOf(key);
      if (name !== undefined) names.push(name);
    }
    if (this.#readOnly) {
      this.#adoptedInMemory = names;
      return names;
    }
    try {
      for (let i = 0; i < names.length; i += ADOPT_CHUNK)
        await this.#note([this.#key], [this.#now(), ...names.slice(i, i + ADOPT_CHUNK)]);
      await this.#redis.set(this.#scannedKey, '1');
    } catch {
      // A read-only connection cannot record what it found; this listing is complete all the same, and
      // the next one scans again.
    }
    return names;
  }

  /** A read of the registry that failed because its key holds something else says which key, and what to do. */
  #explained(error: unknown): unknown {
    if (!(error instanceof Error) || !error.message.startsWith('WRONGTYPE')) return error;
    return new Error(
      `the dependency registry "${this.#key}" is not a sorted set (${error.message}): delete it and "${this.#scannedKey}", and the next listing rebuilds it with one scan of the keyspace`,
      { cause: error },
    );
  }

  #now(): string {
    return this.#clock ? String(this.#clock.now()) : '';
  }
}
