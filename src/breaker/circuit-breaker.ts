import { type Clock, systemClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { BrokenCircuitError } from '../errors/broken-circuit-error.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { isPermanentError } from '../errors/permanent-error.js';
import type { BreakerGate, BreakerVerdict } from '../policy/types.js';
import { MemoryBreakerStore } from './memory-store.js';
import { type BreakerOptions, type ResolvedBreakerOptions, resolveBreakerOptions } from './options.js';
import type {
  BreakerAdmission,
  BreakerEvents,
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
  /** The clock of the default memory store. Default: the system clock. Ignored when `store` is given (the store owns time). */
  clock?: Clock;
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
 *    false, do not call; throw `new BrokenCircuitError(dependency, snapshot.halfOpenAtMs, 'open')` when
 *    `snapshot.state` is `open`, or `new BrokenCircuitError(dependency, undefined, 'half-open')` when it is
 *    half-open with every probe slot taken. Do not record anything for a refused call.
 * 2. After an admitted call, exactly one of `recordSuccess(dependency)` / `recordFailure(dependency)`.
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
  readonly #degraded = new Map<string, boolean>();
  readonly #seen = new Set<string>();

  constructor(options: CircuitBreakerOptions = {}) {
    const { store, clock, dependencies, onListenerError, ...breakerOptions } = options;
    this.#defaults = resolveBreakerOptions(breakerOptions);
    this.#overrides = new Map(
      Object.entries(dependencies ?? {}).map(([dependency, override]) => [
        dependency,
        resolveBreakerOptions(
          { ...breakerOptions, ...override },
          `circuit breaker options for "${dependency}"`,
        ),
      ]),
    );
    this.#store = store ?? new MemoryBreakerStore({ clock: clock ?? systemClock });
    this.events = new EventBus<BreakerEvents>(onListenerError);
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
   * has asked about, sorted. Cheap (no store access): metrics use it to report breakers at scrape time.
   * `RedisBreakerStore.list()` finds every dependency in the fleet.
   *
   * @example
   * for (const dependency of await breaker.dependencies()) console.log(await breaker.state(dependency));
   */
  async dependencies(): Promise<string[]> {
    return [...new Set([...this.#overrides.keys(), ...this.#seen])].sort();
  }

  /**
   * The breaker as `decide` sees it: its state and, unless closed, when it half-opens. Changes nothing.
   *
   * @example
   * const { state, halfOpenAtMs } = await breaker.check('search');
   */
  async check(dependency: string): Promise<BreakerVerdict> {
    const snapshot = await this.state(dependency);
    const verdict: BreakerVerdict = { state: snapshot.state };
    if (snapshot.halfOpenAtMs !== undefined) verdict.halfOpenAtMs = snapshot.halfOpenAtMs;
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
    const admission = await this.#store.acquire(checkDependency(dependency), this.optionsFor(dependency));
    this.#noteDegraded(admission.snapshot);
    this.#emitTransitions(dependency, admission.transitions);
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
   * Records that an admitted call succeeded (a half-open probe success counts towards closing).
   *
   * @example
   * await breaker.recordSuccess('search');
   */
  recordSuccess(dependency: string): Promise<BreakerSnapshot> {
    return this.#record(dependency, 'success');
  }

  /**
   * Records that an admitted call failed because the dependency is unhealthy; may open the breaker.
   *
   * @example
   * await breaker.recordFailure('search');
   */
  recordFailure(dependency: string): Promise<BreakerSnapshot> {
    return this.#record(dependency, 'failure');
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
      throw new BrokenCircuitError(dependency, halfOpenAtMs, 'open');
    }
    const isFailure = options.isFailure ?? ((error: unknown) => !isPermanentError(error));
    let result: T;
    try {
      result = await fn();
    } catch (error) {
      await this.#record(dependency, isFailure(error) ? 'failure' : 'success');
      throw error;
    }
    await this.#record(dependency, 'success');
    return result;
  }

  async #record(dependency: string, outcome: 'success' | 'failure'): Promise<BreakerSnapshot> {
    const result = await this.#store.record(
      checkDependency(dependency),
      outcome,
      this.optionsFor(dependency),
    );
    this.#noteDegraded(result.snapshot);
    this.#emitTransitions(dependency, result.transitions);
    return result.snapshot;
  }

  #emitTransitions(dependency: string, transitions: BreakerTransition[]): void {
    for (const t of transitions) this.events.emit('state-change', { dependency, ...t });
  }

  #noteDegraded(snapshot: BreakerSnapshot): void {
    this.#seen.add(snapshot.dependency);
    const was = this.#degraded.get(snapshot.dependency) ?? false;
    if (was === snapshot.degraded) return;
    this.#degraded.set(snapshot.dependency, snapshot.degraded);
    this.events.emit(snapshot.degraded ? 'degraded' : 'recovered', { dependency: snapshot.dependency });
  }
}

function checkDependency(dependency: string): string {
  if (typeof dependency !== 'string' || dependency.trim() === '' || dependency.length > 200)
    throw new InvalidInputError(
      `dependency: ${JSON.stringify(dependency)} is not a dependency name; use a short non-empty name such as "search"`,
    );
  return dependency;
}
