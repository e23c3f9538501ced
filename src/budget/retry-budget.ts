import { type Clock, systemClock } from '../common/clock.js';
import { formatDuration } from '../common/duration.js';
import { firstLineOf } from '../common/error-text.js';
import { EventBus } from '../common/events.js';
import { assertDependencyName } from '../common/names.js';
import { withTimeout } from '../common/timeout.js';
import { isCorruptBudgetStateError } from '../errors/corrupt-budget-state-error.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { BudgetGate } from '../policy/types.js';
import { MemoryBudgetStore } from './memory-store.js';
import {
  type BudgetFallback,
  type ResolvedBudgetOptions,
  type RetryBudgetOptions,
  resolveBudgetOptions,
} from './options.js';
import type { BudgetMode, BudgetStore, StoreRead, StoreSettings, StoreSpend } from './store.js';
import { SuccessBatches, totalOf } from './success-batches.js';
import type { BudgetEvents, BudgetSnapshot, SpendResult } from './types.js';
import {
  type AgedSuccesses,
  type BudgetWindow,
  budgetWindow,
  PPM,
  sameSettings,
  type WindowCounts,
} from './window.js';

const STORE = 'budget store';
const LISTING = 'budget store listing';
/** Names remembered as already checked; past it the cache starts over (see #check). */
const CHECKED_NAMES_LIMIT = 10_000;

interface Batch {
  inFlight: boolean;
  waiting: Array<(result: SpendResult) => void>;
}

/**
 * A fleet-wide retry budget, keyed by dependency: retries may be at most `ratio` of the successes in the
 * last `windowMs` (sliding, in `buckets` sub-buckets), and never fewer than `minAllowance` per window.
 * `allowance = max(minAllowance, floor(ratio × successes))`; a retry is granted iff retries already granted
 * in the window < allowance; a denial is counted as `denied`, never as spent.
 *
 * - Successes are batched in this process and pushed to a remote store every `flushIntervalMs`, riding
 *   along with the next `trySpend` of the same dependency, and at `close()`; the success path never waits
 *   for Redis.
 * - Every remote call is bounded by `timeoutMs`. A store that fails or is late puts the budget in degraded
 *   mode: it answers from `fallback` (see {@link BudgetFallback}) with `degraded: true`, emits `degraded`,
 *   and checks every `probeIntervalMs` whether the store is back (then emits `recovered`). It never throws
 *   a store failure into a worker and never waits past the timeout. Successes recorded while degraded are
 *   not kept: they could only be stamped with the wrong time later, and dropping them errs on the side of
 *   caution.
 * - `dependencies()` (a scan of the store's keys, slow on a Redis that also holds many BullMQ jobs) is a
 *   report, not a decision: it has its own bound, `listTimeoutMs`, and when it fails or is late it rejects
 *   on its own; the budget stays on the store.
 * - `mode: 'shadow'` grants every retry but counts (and emits, with `mode: 'shadow'`) the denials it would
 *   have made, so a budget can be sized on real traffic before it bites.
 *
 * Implements the policy's `BudgetGate`: pass it to `decide({ ..., budget })`.
 *
 * Defaults: ratio 0.2, windowMs 60 000, minAllowance 10, buckets 10, mode `enforce`, onExhausted
 * `dead-letter`, flushIntervalMs 250, timeoutMs 250, listTimeoutMs 5 000, fallback `local`, probeIntervalMs
 * 1 000.
 *
 * @example
 * const budget = new RetryBudget({ store: new RedisBudgetStore({ redis }), ratio: 0.2 });
 * budget.recordSuccess('search');
 * const r = await budget.trySpend('search');
 * if (!r.granted) deadLetter('budget-exhausted');
 * await budget.close();
 */
export class RetryBudget implements BudgetGate {
  /**
   * Typed events: `granted`, `denied`, `degraded`, `recovered`, and `flushed` (a batch of successes reached
   * the store, on its own or riding along with a `trySpend`).
   */
  readonly events = new EventBus<BudgetEvents>();
  readonly mode: BudgetMode;
  readonly onExhausted: 'dead-letter' | 'defer';
  readonly ratio: number;
  readonly windowMs: number;
  readonly minAllowance: number;
  readonly buckets: number;
  readonly settingsVersion: number;
  /** How often batched successes are pushed to a remote store (default `min(250, windowMs / 10)`). */
  readonly flushIntervalMs: number;
  readonly fallback: BudgetFallback;

  readonly #store: BudgetStore;
  readonly #window: BudgetWindow;
  readonly #options: ResolvedBudgetOptions;
  readonly #clock: Clock;
  readonly #log: ((message: string) => void) | undefined;
  readonly #local: MemoryBudgetStore;
  /** The conservative local budget: the floor only (ratio 0), whatever the successes. */
  readonly #floorWindow: BudgetWindow;
  /** Successes not yet sent to a remote store, stamped on this budget's clock. */
  readonly #pending: SuccessBatches;
  /** Per dependency, the governing settings last reported when they were not ours (said once each). */
  readonly #overruled = new Map<string, BudgetWindow>();
  /** Dependencies reported unreadable by a read and not yet replaced by a write: reported once. */
  readonly #unreadable = new Set<string>();
  readonly #checked = new Set<string>();
  /** Remote `trySpend` requests per dependency: the call in flight and those waiting for the next one. */
  readonly #batches = new Map<string, Batch>();
  readonly #timer: NodeJS.Timeout | undefined;
  /** Success batches on their way to the store: `close()` waits for them. */
  readonly #flushing = new Set<Promise<void>>();
  /** The listing in flight: concurrent `dependencies()` calls share one scan. */
  #listing: Promise<string[]> | undefined;
  #degradedSince: number | undefined;
  #lastProbeAt = 0;
  #probing = false;
  #closed = false;

  constructor(options: RetryBudgetOptions) {
    const o = resolveBudgetOptions(options);
    this.#options = o;
    this.#store = o.store;
    this.#clock = o.clock ?? systemClock;
    // A degraded budget changes what workers do, so it is said out loud, not only counted in metrics.
    this.#log =
      o.log === false ? undefined : (o.log ?? ((m) => process.emitWarning(m, { type: 'StormguardWarning' })));
    this.#window = budgetWindow({ ...o, version: o.settingsVersion });
    this.#floorWindow = { ...this.#window, ratioPpm: 0 };
    this.#pending = new SuccessBatches(Math.max(1, Math.floor(this.#window.bucketMs / 8)));
    this.#local = new MemoryBudgetStore({ clock: this.#clock });
    this.mode = o.mode;
    this.onExhausted = o.onExhausted;
    this.ratio = o.ratio;
    this.windowMs = o.windowMs;
    this.minAllowance = o.minAllowance;
    this.buckets = o.buckets;
    this.settingsVersion = o.settingsVersion;
    this.flushIntervalMs = o.flushIntervalMs;
    this.fallback = o.fallback;
    if (this.#store.remote) {
      this.#timer = setInterval(() => this.#tick(), o.flushIntervalMs);
      // A budget must never keep a process alive on its own.
      this.#timer.unref();
    }
  }

  /** True while the store is unreachable and the fallback answers. */
  get degraded(): boolean {
    return this.#degradedSince !== undefined;
  }

  /**
   * Counts `count` (default 1) successes for `dependency`. Synchronous and cheap: for a remote store it only
   * adds to a local batch.
   */
  recordSuccess(dependency: string, count = 1): void {
    this.#check(dependency);
    if (!Number.isSafeInteger(count) || count < 1)
      throw new InvalidInputError(`recordSuccess: count must be a whole number >= 1, got ${count}`);
    if (!this.#store.remote) {
      const write = this.#store.addSuccesses(dependency, [{ ageMs: 0, count }], this.#window);
      if (!isThenable(write)) this.#noteSettings(dependency, write);
      return;
    }
    if (this.#degradedSince !== undefined) return;
    this.#pending.add(dependency, this.#clock.now(), count);
  }

  /**
   * Pushes batched successes to the store now (one call per dependency, all in parallel) and waits for
   * batches the flush timer already sent: when it resolves, every success recorded before the call has
   * reached the store or been given up on (each push is bounded by `timeoutMs`). A worker's `close()`
   * relies on that, since it flushes a budget it may share rather than closing it.
   */
  async flush(): Promise<void> {
    const earlier = [...this.#flushing];
    if (this.#pending.size > 0 && this.#degradedSince !== undefined) this.#pending.clear();
    if (this.#pending.size > 0) {
      const batch = this.#pending.takeAll(this.#clock.now());
      const pushing = Promise.all(batch.map(([dependency, aged]) => this.#push(dependency, aged))).then(
        () => {},
      );
      this.#flushing.add(pushing);
      earlier.push(pushing.finally(() => this.#flushing.delete(pushing)));
    }
    await Promise.all(earlier);
  }

  /**
   * Asks for one retry against `dependency`'s budget. Never rejects because of the store: a failing or slow
   * store yields the fallback's answer with `degraded: true`. Rejects only for an invalid dependency name.
   *
   * On a remote store, requests for one dependency that arrive while a call for it is in flight wait for it
   * and then share the next call (one round trip decides them all, one after another, exactly as if they
   * had been sent one by one), so a request waits at most about twice `timeoutMs`.
   */
  async trySpend(dependency: string): Promise<SpendResult> {
    this.#check(dependency);
    if (this.#degradedSince !== undefined) {
      this.#probe();
      return this.#fallbackResult(dependency);
    }
    if (!this.#store.remote) {
      const spend = await this.#store.trySpend(dependency, this.#window, [], 1);
      return this.#settle(dependency, spend, 0, 1, false);
    }
    return new Promise<SpendResult>((resolve) => {
      let batch = this.#batches.get(dependency);
      if (!batch) {
        batch = { inFlight: false, waiting: [] };
        this.#batches.set(dependency, batch);
      }
      batch.waiting.push(resolve);
      if (!batch.inFlight) void this.#send(dependency, batch);
    });
  }

  /** Sends every waiting request for `dependency` as one store call, then the next batch if one formed. */
  async #send(dependency: string, batch: Batch): Promise<void> {
    const waiting = batch.waiting;
    batch.waiting = [];
    batch.inFlight = true;
    const aged = this.#pending.take(dependency, this.#clock.now());
    try {
      const spend = await withTimeout(
        this.#store.trySpend(dependency, this.#window, aged, waiting.length),
        this.#options.timeoutMs,
        STORE,
      );
      if (aged.length > 0 && this.events.has('flushed'))
        this.events.emit('flushed', { dependency, successes: totalOf(aged) });
      for (let i = 0; i < waiting.length; i++)
        waiting[i]!(this.#settle(dependency, spend, i, waiting.length, false));
    } catch (error) {
      this.#degrade(error, dependency);
      for (const resolve of waiting) resolve(this.#fallbackResult(dependency));
    } finally {
      batch.inFlight = false;
      if (batch.waiting.length === 0) this.#batches.delete(dependency);
      else if (this.#degradedSince === undefined) void this.#send(dependency, batch);
      else {
        // The store just failed: those who queued behind the failed call get the fallback at once.
        this.#batches.delete(dependency);
        for (const resolve of batch.waiting) resolve(this.#fallbackResult(dependency));
      }
    }
  }

  /**
   * The dependency's budget without spending: the store's view (the whole fleet's), or the fallback's while
   * degraded. Successes this process recorded in the last `flushIntervalMs` and has not flushed yet are not
   * in it; the next `trySpend` or flush adds them.
   */
  async state(dependency: string): Promise<BudgetSnapshot> {
    this.#check(dependency);
    if (this.#degradedSince === undefined) {
      try {
        const read = await withTimeout(this.#store.read(dependency), this.#options.timeoutMs, STORE);
        if (read) this.#noteSettings(dependency, read);
        return this.#snapshot(
          dependency,
          read ?? this.#empty(this.#window),
          read?.window ?? this.#window,
          false,
        );
      } catch (error) {
        // A dependency whose state cannot be read is reported; it degrades nothing, not even itself.
        if (isCorruptBudgetStateError(error)) {
          this.#reportUnreadable(dependency, error.reason, false);
          return this.#snapshot(dependency, this.#empty(this.#window), this.#window, false);
        }
        this.#degrade(error, dependency);
      }
    } else this.#probe();
    const local = this.fallback === 'local' ? this.#local.read(dependency) : undefined;
    return this.#snapshot(dependency, local ?? this.#empty(this.#floorWindow), this.#window, true);
  }

  /**
   * Dependencies the store holds counts for (while the budget is degraded: those this process has used).
   *
   * Scanning a store's keys can be slow where `trySpend` is not, so a listing never degrades the budget: it
   * is bounded by `listTimeoutMs`, and a listing that fails or is late rejects (a late one with a
   * `StoreTimeoutError`) and stops scanning. Concurrent calls share one listing.
   */
  dependencies(): Promise<string[]> {
    if (this.#degradedSince !== undefined) return Promise.resolve([...this.#checked].sort());
    this.#listing ??= this.#list().finally(() => {
      this.#listing = undefined;
    });
    return this.#listing;
  }

  async #list(): Promise<string[]> {
    const abandon = new AbortController();
    try {
      return await withTimeout(
        this.#store.dependencies({ signal: abandon.signal }),
        this.#options.listTimeoutMs,
        LISTING,
      );
    } catch (error) {
      abandon.abort(error);
      throw error;
    }
  }

  /**
   * Stops the flush timer, pushes what is batched and waits for batches already on their way (each still
   * bounded by `timeoutMs`). Idempotent. The store (your connection) stays open.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    await this.flush();
  }

  #check(dependency: string): void {
    if (this.#checked.has(dependency)) return;
    assertDependencyName(dependency);
    // A cache of names already checked, not state: bounded by starting over (a name is checked again).
    if (this.#checked.size >= CHECKED_NAMES_LIMIT) this.#checked.clear();
    this.#checked.add(dependency);
  }

  async #push(dependency: string, aged: AgedSuccesses[]): Promise<void> {
    try {
      const write = await withTimeout(
        this.#store.addSuccesses(dependency, aged, this.#window),
        this.#options.timeoutMs,
        STORE,
      );
      this.#noteSettings(dependency, write);
      if (this.events.has('flushed')) this.events.emit('flushed', { dependency, successes: totalOf(aged) });
    } catch (error) {
      this.#degrade(error, dependency);
    }
  }

  #fallbackResult(dependency: string): SpendResult {
    if (this.fallback === 'local') {
      const spend = this.#local.trySpend(dependency, this.#floorWindow, [], 1);
      return this.#settle(dependency, spend, 0, 1, true);
    }
    const granted = this.fallback === 'allow' ? 1 : 0;
    const spend = {
      granted,
      allowance: this.minAllowance,
      spent: 0,
      denied: 0,
      successes: 0,
      window: this.#window,
    };
    return this.#settle(dependency, spend, 0, 1, true);
  }

  /**
   * The result of request `index` of the `count` a store call decided one after another: the counts are
   * those right after its own decision, so each result reads as if it had been decided alone.
   */
  #settle(
    dependency: string,
    spend: StoreSpend,
    index: number,
    count: number,
    degraded: boolean,
  ): SpendResult {
    if (!degraded && index === 0) this.#noteSettings(dependency, spend);
    const granted = index < spend.granted;
    const result: SpendResult = {
      dependency,
      granted: granted || this.mode === 'shadow',
      allowance: spend.allowance,
      spent: spend.spent - spend.granted + Math.min(index + 1, spend.granted),
      denied: spend.denied - (count - spend.granted) + Math.max(0, index + 1 - spend.granted),
      successes: spend.successes,
      windowMs: degraded ? this.windowMs : spend.window.windowMs,
      degraded,
    };
    if (granted) {
      if (this.events.has('granted')) this.events.emit('granted', result);
    } else if (this.events.has('denied')) {
      this.events.emit('denied', { ...result, mode: this.mode });
    }
    return result;
  }

  #snapshot(
    dependency: string,
    counts: WindowCounts,
    window: BudgetWindow,
    degraded: boolean,
  ): BudgetSnapshot {
    return {
      dependency,
      allowance: counts.allowance,
      spent: counts.spent,
      denied: counts.denied,
      successes: counts.successes,
      windowMs: window.windowMs,
      degraded,
    };
  }

  /**
   * Says once per dependency (and again whenever they change) that the settings stored with it overrule
   * this worker's, and reports a state the store had to reset.
   */
  #noteSettings(dependency: string, applied: StoreSettings | StoreRead): void {
    if ('reset' in applied && applied.reset !== undefined)
      this.#reportUnreadable(dependency, applied.reset, true);
    const { window } = applied;
    const ours =
      sameSettings(window, this.#window) || (applied.pending && sameSettings(applied.pending, this.#window));
    if (ours) {
      this.#overruled.delete(dependency);
      return;
    }
    const known = this.#overruled.get(dependency);
    if (known && sameSettings(known, window)) return;
    this.#overruled.set(dependency, window);
    this.events.emit('overruled', { dependency, stored: window, own: this.#window });
    this.#log?.(
      `retry budget ${JSON.stringify(dependency)} follows the settings stored for it (${describe(window)}), ` +
        `not this worker's (${describe(this.#window)}): raise settingsVersion above ${window.version} to roll out ` +
        "a change (docs/budget.md: Changing a budget's settings)",
    );
  }

  /** Reports an unreadable state once: a read that finds it and the write that replaces it say it once. */
  #reportUnreadable(dependency: string, reason: string, replaced: boolean): void {
    const known = this.#unreadable.has(dependency);
    if (replaced) this.#unreadable.delete(dependency);
    else this.#unreadable.add(dependency);
    if (known) return;
    this.events.emit('reset', { dependency, reason });
    this.#log?.(
      `retry budget state of ${JSON.stringify(dependency)} could not be read (${reason}); it starts afresh, other dependencies are unaffected`,
    );
  }

  #empty(window: BudgetWindow): WindowCounts {
    return { allowance: window.minAllowance, spent: 0, denied: 0, successes: 0 };
  }

  #degrade(error: unknown, dependency?: string): void {
    if (this.#degradedSince !== undefined) return;
    this.#degradedSince = this.#clock.now();
    this.#lastProbeAt = performance.now();
    this.#pending.clear();
    this.events.emit('degraded', {
      store: 'budget',
      dependency,
      error,
      since: this.#degradedSince,
      mode: this.fallback,
    });
    this.#log?.(
      `retry budget store unreachable (${firstLineOf(error)}); the ${this.fallback} fallback answers until it is back`,
    );
  }

  /** At most one probe in flight and one per `probeIntervalMs` (real time: it schedules I/O). */
  #probe(): void {
    if (this.#probing || performance.now() - this.#lastProbeAt < this.#options.probeIntervalMs) return;
    this.#probing = true;
    this.#lastProbeAt = performance.now();
    Promise.resolve()
      .then(() => withTimeout(this.#store.ping(), this.#options.timeoutMs, STORE))
      .then(
        () => this.#recover(),
        () => {},
      )
      .finally(() => {
        this.#probing = false;
      });
  }

  #recover(): void {
    if (this.#degradedSince === undefined) return;
    const since = this.#degradedSince;
    const downForMs = Math.max(0, this.#clock.now() - since);
    this.#degradedSince = undefined;
    this.events.emit('recovered', { store: 'budget', since, downForMs });
    this.#log?.(`retry budget store reachable again after ${formatDuration(downForMs)}`);
  }

  #tick(): void {
    if (this.#degradedSince !== undefined) this.#probe();
    else void this.flush();
  }
}

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Settings as a log line names them. */
function describe(window: BudgetWindow): string {
  return (
    `windowMs ${window.windowMs}, ratio ${window.ratioPpm / PPM}, minAllowance ${window.minAllowance}, ` +
    `buckets ${window.buckets}, settingsVersion ${window.version}`
  );
}
