import { type Clock, systemClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { assertDependencyName } from '../common/names.js';
import { BrokenCircuitError } from '../errors/broken-circuit-error.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { isPermanentError } from '../errors/permanent-error.js';
import type { BreakerGate, BreakerVerdict } from '../policy/types.js';
import { MemoryBreakerStore } from './memory-store.js';
import { type BreakerOptions, type ResolvedBreakerOptions, resolveBreakerOptions } from './options.js';
import { BreakerStateCache } from './state-cache.js';
import type {
  BreakerAdmission,
  BreakerBatch,
  BreakerEvents,
  BreakerRecordResult,
  BreakerSnapshot,
  BreakerStore,
  BreakerTransition,
} from './types.js';

/**
 * Options of {@link CircuitBreaker}: the breaker options (see BreakerOptions for defaults) plus wiring.
 *
 * @example
 * new CircuitBreaker({ store, coolDownMs: 10_000, dependencies: { payments: { consecutiveFailures: 3 } } });
 */
export interface CircuitBreakerOptions extends Partial<BreakerOptions> {
  /** Where state lives. Default: a MemoryBreakerStore on `clock` (one process). Share it fleet-wide with RedisBreakerStore. */
  store?: BreakerStore;
  /**
   * The clock of the default memory store and of the state cache's deadlines. Default: the system clock.
   * Breaker time itself comes from the store when `store` is given.
   */
  clock?: Clock;
  /**
   * With a shared store (RedisBreakerStore), how long a closed breaker's state is reused without asking
   * the store, in ms (whole number >= 0; 0 asks every time). Default 250. Within it, `acquire` and
   * `check` (decide's view) on a closed breaker answer locally and successes are counted locally and sent
   * as one batch per dependency at most every `stateCacheMs` (and on `flush()` / `close()`); failures and
   * half-open probe outcomes still go to the store at once. An open breaker is answered locally for
   * `stateCacheMs` too (or until it half-opens, when sooner); half-open always asks the store. The price: a
   * breaker a peer opens may admit this process's calls (and let decide retry them) for up to
   * `stateCacheMs` more; the bound: an operator's override (force open, force closed, reset) reaches this
   * process within `stateCacheMs`. An in-process store (MemoryBreakerStore) is never cached.
   */
  stateCacheMs?: number;
  /** Per-dependency overrides of the breaker options, e.g. `{ payments: { coolDownMs: 120_000 } }`. Default none. */
  dependencies?: Record<string, Partial<BreakerOptions>>;
  /** Called when an event listener throws (the breaker itself never fails because of a listener). Default: ignore. */
  onListenerError?: (error: unknown) => void;
}

/**
 * Options of {@link CircuitBreaker.execute}.
 *
 * @example
 * await breaker.execute('crm', call, { isFailure: (e) => isTransientError(e) });
 */
export interface ExecuteOptions {
  /**
   * Whether an error counts against the dependency. Default: every error except a PermanentError (a
   * permanent error means the dependency answered and the request was wrong, which is a success for the
   * dependency's health).
   */
  isFailure?: (error: unknown) => boolean;
}

/**
 * A fleet-wide circuit breaker per dependency: closed → open on a failure rate over a
 * sliding window (above a minimum volume) or on N failures in a row → half-open after a cool-down, where a
 * bounded number of probes is admitted across the whole fleet → closed after enough probe successes, or
 * open again on a probe failure.
 *
 * **Contract for a caller that wraps downstream calls** (the worker's `ctx.call(dependency, fn)`):
 * 1. `const admission = await breaker.acquire(dependency)` before the call. If `admission.allowed` is
 *    false, do not call; throw `new BrokenCircuitError(dependency, snapshot.halfOpenAtMs, 'open',
 *    snapshot.halfOpenAtMs - snapshot.nowMs)` when
 *    `snapshot.state` is `open`, or `new BrokenCircuitError(dependency, undefined, 'half-open')` when it is
 *    half-open with every probe slot taken. Do not record anything for a refused call.
 * 2. After an admitted call, exactly one of `recordSuccess(dependency, admission)` /
 *    `recordFailure(dependency, admission)`, passing the admission back: a half-open breaker counts only
 *    the outcomes of the probes it admitted, by their ticket (`admission.ticket`).
 *    Record a failure for errors that say the dependency is unhealthy (timeouts, connection errors, 5xx,
 *    429: what the policy classifies as retryable); record a success when it answered, including a
 *    permanent error such as a 400 or 404. A probe that never reports frees its slot one cool-down later.
 * 3. `execute(dependency, fn)` does 1 and 2 for you.
 * In `decide`, the breaker is a {@link BreakerGate}: `check(dependency)` returns the state and, when open,
 * `halfOpenAtMs`, the time a job is delayed to (or it is dead-lettered with reason `breaker-open`).
 *
 * Every method resolves (never rejects) when the Redis store is unreachable: it degrades to the fallback
 * it was built with and marks snapshots `degraded`.
 *
 * @example
 * const breaker = new CircuitBreaker({ store: new RedisBreakerStore({ redis }), consecutiveFailures: 5 });
 * breaker.events.on('state-change', (e) => log.warn(`${e.dependency}: ${e.from} → ${e.to} (${e.reason})`));
 * const hits = await breaker.execute('search', () => search.query('storm'));
 */
export class CircuitBreaker implements BreakerGate {
  /** 'state-change', 'rejected', 'degraded', 'recovered'. */
  readonly events: EventBus<BreakerEvents>;
  readonly #store: BreakerStore;
  readonly #defaults: ResolvedBreakerOptions;
  readonly #overrides: Map<string, ResolvedBreakerOptions>;
  /** Dependencies whose last answer came from a fallback (recovered ones are dropped). */
  /** Dependencies whose shared store is unreachable, and since when (this breaker's clock). */
  readonly #degraded = new Map<string, number>();
  /** Dependencies this process asked about, with when it last did (local clock), for `dependencies()`. */
  readonly #seen = new Map<string, number>();
  #sweepSeenAtSize = SEEN_SWEEP_MIN_SIZE;
  readonly #clock: Clock;
  /** Set when the store is shared and `stateCacheMs` > 0: closed / open states are reused locally. */
  readonly #cache: BreakerStateCache | undefined;
  /** Successes on a closed breaker not yet sent to the store, per dependency. */
  readonly #pending = new Map<string, number>();
  /** Batches on their way to the store: `flush()` waits for them. */
  readonly #flushing = new Set<Promise<unknown>>();
  #flushTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: CircuitBreakerOptions = {}) {
    const { store, clock, dependencies, onListenerError, stateCacheMs, ...breakerOptions } = options;
    this.#defaults = resolveBreakerOptions(breakerOptions);
    this.#overrides = new Map(
      Object.entries(dependencies ?? {}).map(([dependency, override]) => [
        checkDependency(dependency),
        resolveBreakerOptions(
          { ...breakerOptions, ...override },
          `circuit breaker options for "${dependency}"`,
        ),
      ]),
    );
    this.#clock = clock ?? systemClock;
    this.#store = store ?? new MemoryBreakerStore({ clock: this.#clock });
    this.events = new EventBus<BreakerEvents>(onListenerError);
    const cacheMs = checkStateCacheMs(stateCacheMs ?? DEFAULT_STATE_CACHE_MS);
    if (cacheMs > 0 && this.#store.shared === true && this.#store.recordBatch)
      this.#cache = new BreakerStateCache(cacheMs, clock ?? systemClock);
  }

  /**
   * The validated options that apply to `dependency` (defaults, then constructor options, then its override).
   *
   * @example
   * breaker.optionsFor('search').coolDownMs; // 30000 unless overridden
   */
  optionsFor(dependency: string): ResolvedBreakerOptions {
    return this.#overrides.get(dependency) ?? this.#defaults;
  }

  /**
   * The dependencies this breaker knows of: those with a per-dependency override and those this process
   * has asked about in the last 2 × (windowMs + coolDownMs) (longer ago, their state has expired), sorted. Cheap (no store access): metrics use it to report breakers at scrape time.
   * `RedisBreakerStore.list()` finds every dependency in the fleet.
   *
   * @example
   * for (const dependency of await breaker.dependencies()) console.log(await breaker.state(dependency));
   */
  async dependencies(): Promise<string[]> {
    this.#sweepSeen();
    return [...new Set([...this.#overrides.keys(), ...this.#seen.keys()])].sort();
  }

  /**
   * The breaker as `decide` sees it: its state and, unless closed, when it half-opens. Changes nothing.
   * With the state cache on, a closed or open state learned within `stateCacheMs` answers without asking
   * the store, as `acquire` does (the same staleness bound); a half-open or unknown one asks.
   *
   * @example
   * const { state, halfOpenAtMs } = await breaker.check('search');
   */
  async check(dependency: string): Promise<BreakerVerdict> {
    const snapshot = this.#cache?.trusted(checkDependency(dependency)) ?? (await this.state(dependency));
    const verdict: BreakerVerdict = { state: snapshot.state };
    if (snapshot.halfOpenAtMs !== undefined) {
      verdict.halfOpenAtMs = snapshot.halfOpenAtMs;
      verdict.halfOpenInMs = halfOpenInMs(snapshot);
    }
    return verdict;
  }

  /**
   * The dependency's full snapshot (plain JSON). Changes nothing.
   *
   * @example
   * const { state, failures, volume } = await breaker.state('search');
   */
  async state(dependency: string): Promise<BreakerSnapshot> {
    const snapshot = await this.#store.read(checkDependency(dependency), this.optionsFor(dependency));
    this.#noteDegraded(snapshot);
    return snapshot;
  }

  /**
   * May a call to `dependency` go downstream now? Closed: yes. Open: no. Half-open: yes for at most
   * `halfOpenProbes` calls in flight across the fleet (`probe: true`), no for the rest. Emits 'rejected'
   * when the answer is no. See the class comment for what to do with the answer.
   *
   * @example
   * const { allowed, snapshot } = await breaker.acquire('search');
   * if (!allowed) throw new BrokenCircuitError('search', snapshot.halfOpenAtMs, 'open'); // or 'half-open'
   */
  async acquire(dependency: string): Promise<BreakerAdmission> {
    checkDependency(dependency);
    const known = this.#cache?.trusted(dependency);
    let admission: BreakerAdmission;
    if (known) {
      admission = { allowed: known.state === 'closed', probe: false, transitions: [], snapshot: known };
    } else {
      admission = this.#learnAdmission(
        dependency,
        await this.#store.acquire(dependency, this.optionsFor(dependency)),
      );
    }
    return this.#answer(dependency, admission);
  }

  /**
   * {@link acquire} answered synchronously, when the store is in this process (a `MemoryBreakerStore`) and
   * no state cache stands in front of it: the same admission, events and bookkeeping, without a promise.
   * `undefined` when the answer needs a round trip; call `acquire` then. For callers that make millions
   * of calls on one process's breaker, such as the simulator.
   *
   * @example
   * const admission = breaker.acquireNow('search') ?? (await breaker.acquire('search'));
   */
  acquireNow(dependency: string): BreakerAdmission | undefined {
    checkDependency(dependency);
    if (this.#cache || !this.#store.acquireNow) return undefined;
    const admission = this.#store.acquireNow(dependency, this.optionsFor(dependency));
    return this.#answer(dependency, this.#learnAdmission(dependency, admission));
  }

  #learnAdmission(dependency: string, admission: BreakerAdmission): BreakerAdmission {
    this.#cache?.learn(admission.snapshot);
    this.#noteDegraded(admission.snapshot);
    this.#emitTransitions(dependency, admission.transitions);
    return admission;
  }

  /** Says when an admission is a refusal (the `rejected` event), and returns it. */
  #answer(dependency: string, admission: BreakerAdmission): BreakerAdmission {
    const { state, halfOpenAtMs } = admission.snapshot;
    if (!admission.allowed && this.events.has('rejected'))
      this.events.emit('rejected', {
        dependency,
        state: state === 'half-open' ? 'half-open' : 'open',
        ...(halfOpenAtMs === undefined ? {} : { halfOpenAtMs }),
      });
    return admission;
  }

  /**
   * Records that an admitted call succeeded. Pass the call's admission: when it was a half-open probe, the
   * success counts towards closing; any other success (a call admitted while closed that finished during
   * half-open, or no admission given) is counted in the window only. With the state cache on and the
   * breaker last known closed, a non-probe success is only counted here and sent with the next batch; the
   * snapshot returned is then the last known one plus this process's unsent successes.
   *
   * @example
   * const admission = await breaker.acquire('search');
   * if (admission.allowed) await breaker.recordSuccess('search', admission);
   */
  recordSuccess(dependency: string, admission?: Pick<BreakerAdmission, 'ticket'>): Promise<BreakerSnapshot> {
    return this.#record(dependency, 'success', admission?.ticket);
  }

  /**
   * Records that an admitted call failed because the dependency is unhealthy; may open the breaker. Pass
   * the call's admission: a half-open breaker reopens only on the failure of a probe it admitted.
   *
   * @example
   * await breaker.recordFailure('search', admission);
   */
  recordFailure(dependency: string, admission?: Pick<BreakerAdmission, 'ticket'>): Promise<BreakerSnapshot> {
    return this.#record(dependency, 'failure', admission?.ticket);
  }

  /**
   * `recordSuccess` / `recordFailure` applied synchronously, under the same conditions as
   * {@link acquireNow}: the snapshot after the outcome, or `undefined` when recording needs a round trip
   * (call `recordSuccess` / `recordFailure` then).
   *
   * @example
   * const snapshot = breaker.recordNow('search', 'failure', admission) ?? (await breaker.recordFailure('search', admission));
   */
  recordNow(
    dependency: string,
    outcome: 'success' | 'failure',
    admission?: Pick<BreakerAdmission, 'ticket'>,
  ): BreakerSnapshot | undefined {
    checkDependency(dependency);
    if (this.#cache || !this.#store.recordNow) return undefined;
    const options = this.optionsFor(dependency);
    return this.#learn(dependency, this.#store.recordNow(dependency, outcome, options, admission?.ticket));
  }

  /**
   * Sends every batched success to the store now (one round trip per dependency) and waits for batches
   * already on their way. Call it before reading state that must include this process's latest successes.
   * A no-op without a state cache.
   *
   * @example
   * await breaker.flush();
   * const { successes } = await breaker.state('search');
   */
  async flush(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    const sends = [...this.#pending].map(([dependency, successes]) => {
      this.#pending.delete(dependency);
      return this.#send(dependency, { successes });
    });
    await Promise.all([...this.#flushing, ...sends]);
  }

  /**
   * Flushes batched successes; later successes are recorded one by one, at once. Does not close the store
   * (its Redis client is the caller's). Safe to call twice.
   *
   * @example
   * process.on('SIGTERM', async () => { await worker.close(); await breaker.close(); });
   */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
  }

  /**
   * Runs `fn` through the breaker: acquires, calls, records the outcome, and returns or rethrows what `fn`
   * did. Throws a BrokenCircuitError (without calling `fn`) when the breaker refuses the call.
   *
   * @example
   * const doc = await breaker.execute('crm', () => crm.fetch(id), { isFailure: (e) => isTransientError(e) });
   */
  async execute<T>(dependency: string, fn: () => Promise<T> | T, options: ExecuteOptions = {}): Promise<T> {
    const admission = await this.acquire(dependency);
    if (!admission.allowed) {
      const { state, halfOpenAtMs } = admission.snapshot;
      if (state === 'half-open') throw new BrokenCircuitError(dependency, undefined, 'half-open');
      throw new BrokenCircuitError(dependency, halfOpenAtMs, 'open', halfOpenInMs(admission.snapshot));
    }
    const isFailure = options.isFailure ?? ((error: unknown) => !isPermanentError(error));
    let result: T;
    try {
      result = await fn();
    } catch (error) {
      await this.#record(dependency, isFailure(error) ? 'failure' : 'success', admission.ticket);
      throw error;
    }
    await this.#record(dependency, 'success', admission.ticket);
    return result;
  }

  async #record(
    dependency: string,
    outcome: 'success' | 'failure',
    ticket: string | undefined,
  ): Promise<BreakerSnapshot> {
    checkDependency(dependency);
    if (!this.#cache) {
      const result = await this.#store.record(dependency, outcome, this.optionsFor(dependency), ticket);
      return this.#learn(dependency, result);
    }
    const closed = this.#cache.lastKnownClosed(dependency);
    if (outcome === 'success' && ticket === undefined && !this.#closed && closed) {
      const pending = (this.#pending.get(dependency) ?? 0) + 1;
      this.#pending.set(dependency, pending);
      // Unref'd: a pending batch alone must not keep a process alive (close() sends it). The store never
      // rejects (it degrades instead), so the catch only keeps a broken custom store from crashing.
      this.#flushTimer ??= setTimeout(() => void this.flush().catch(() => {}), this.#cache.ttlMs).unref();
      return {
        ...closed,
        successes: closed.successes + pending,
        volume: closed.volume + pending,
        consecutiveFailures: 0,
      };
    }
    // Successes counted before this outcome go first, in the same round trip, so the order holds.
    const successes = this.#pending.get(dependency) ?? 0;
    this.#pending.delete(dependency);
    return this.#send(dependency, { successes, outcome, ...(ticket === undefined ? {} : { ticket }) });
  }

  /** One batch to the store (which has `recordBatch`: the cache is only built for such a store). */
  #send(dependency: string, batch: BreakerBatch): Promise<BreakerSnapshot> {
    const store = this.#store as Required<Pick<BreakerStore, 'recordBatch'>>;
    const sending = store
      .recordBatch(dependency, batch, this.optionsFor(dependency))
      .then((result) => this.#learn(dependency, result));
    this.#flushing.add(sending);
    return sending.finally(() => this.#flushing.delete(sending));
  }

  #learn(dependency: string, result: BreakerRecordResult): BreakerSnapshot {
    this.#cache?.learn(result.snapshot);
    this.#noteDegraded(result.snapshot);
    this.#emitTransitions(dependency, result.transitions);
    return result.snapshot;
  }

  #emitTransitions(dependency: string, transitions: BreakerTransition[]): void {
    for (const t of transitions) this.events.emit('state-change', { dependency, ...t });
  }

  #noteDegraded(snapshot: BreakerSnapshot): void {
    const { dependency } = snapshot;
    if (!this.#seen.has(dependency) && this.#seen.size >= this.#sweepSeenAtSize) this.#sweepSeen();
    this.#seen.set(dependency, this.#clock.now());
    const since = this.#degraded.get(dependency);
    if ((since !== undefined) === snapshot.degraded) return;
    const now = this.#clock.now();
    if (since === undefined) {
      this.#degraded.set(dependency, now);
      this.events.emit('degraded', { store: 'breaker', dependency, since: now });
      return;
    }
    this.#degraded.delete(dependency);
    this.events.emit('recovered', {
      store: 'breaker',
      dependency,
      since,
      downForMs: Math.max(0, now - since),
    });
  }

  /**
   * Forgets dependencies not asked about for 2 × (windowMs + coolDownMs), and what the state cache holds on
   * them: their state has expired in the store. A scan of the whole map, run when it doubles (and on
   * `dependencies()`), so the hot path only updates a time.
   */
  #sweepSeen(): void {
    const nowMs = this.#clock.now();
    for (const [dependency, lastMs] of this.#seen) {
      const options = this.optionsFor(dependency);
      if (nowMs - lastMs < 2 * (options.windowMs + options.coolDownMs)) continue;
      if (this.#degraded.has(dependency) || this.#pending.has(dependency)) continue;
      this.#seen.delete(dependency);
      this.#cache?.forget(dependency);
    }
    this.#sweepSeenAtSize = Math.max(SEEN_SWEEP_MIN_SIZE, 2 * this.#seen.size);
  }
}

const DEFAULT_STATE_CACHE_MS = 250;
const SEEN_SWEEP_MIN_SIZE = 1_024;

/** Time left until the breaker half-opens, on the store's clock alone: its deadline minus its own now. */
function halfOpenInMs(snapshot: BreakerSnapshot): number | undefined {
  return snapshot.halfOpenAtMs === undefined
    ? undefined
    : Math.max(0, snapshot.halfOpenAtMs - snapshot.nowMs);
}

function checkStateCacheMs(value: number): number {
  if (!Number.isInteger(value) || value < 0)
    throw new InvalidInputError(
      `stateCacheMs: ${JSON.stringify(value)} is invalid; use a whole number of ms >= 0 (default 250, 0 turns the cache off)`,
    );
  return value;
}

// The one name rule every part and store shares (src/common/names.ts): a name the budget accepts, the
// breaker accepts too.
function checkDependency(dependency: string): string {
  assertDependencyName(dependency);
  return dependency;
}
