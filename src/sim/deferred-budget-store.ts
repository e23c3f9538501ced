import { MemoryBudgetStore } from '../budget/memory-store.js';
import type { BudgetStore, StoreRead, StoreSpend, StoreWrite } from '../budget/store.js';
import type { AgedSuccesses, BudgetWindow } from '../budget/window.js';
import type { Clock } from '../common/clock.js';

/** Writes a log holds before they are applied, whatever happens next: it never grows past this. */
const LOG_LIMIT = 32;
/**
 * Logs kept before the first sweep of those the store has forgotten: more than a scenario has dependencies,
 * so a budget's own store never sweeps (a sweep per few writes cost more than the logs' memory).
 */
const SWEEP_MIN_SIZE = 256;

/** The success writes for one dependency not applied yet, in time order. */
interface SuccessLog {
  /**
   * True when the log's first write is held in `firstAt` and `firstCount`: one that `logSuccess` made (one
   * count at age 0), the only write most logs of per-worker budgets ever hold before they expire, kept in
   * the log itself so that logging it touches no array.
   */
  first: boolean;
  firstAt: number;
  firstCount: number;
  /**
   * The other writes, in order after the first: per write, its time, its number of aged successes, then
   * each as an age and a count; built on the first such write. Only the first `used` entries hold writes:
   * emptying the log keeps the array's room, so a log refilled for each success allocates nothing (a new
   * backing store per success, promoted before its write expired, was most of per-worker budgets' garbage).
   */
  writes: number[] | undefined;
  /** Entries of `writes` in use. */
  used: number;
  /** Writes in `writes`. */
  count: number;
  /**
   * When the store forgets the dependency if nothing else writes it: two windows after the last write
   * (applied or logged), as the store's own expiry.
   */
  keepUntil: number;
}

/**
 * A `MemoryBudgetStore` for one budget's settings, whose success writes are logged and applied only when
 * something reads the dependency: before a `trySpend`, a `read` or a listing, the logged writes are applied
 * in order, each at its own time (the store's clock is set back to it), so every answer is the one the
 * store gives when each write is applied at once. Writes the store would have forgotten unread (nothing
 * wrote for two windows after them) are dropped instead.
 *
 * Why: per-worker budgets are a budget per worker and dependency, and at 10 000 workers and 50
 * dependencies most of them see a success now and then and nothing else: building the store's state for
 * each (a ring of sub-buckets) only for it to expire unread was most of the strategy's cost.
 *
 * A write with settings other than the first ones written is applied at once, and from then on every write
 * is (which settings govern a dependency is then the store's to say).
 *
 * @example
 * const store = new DeferredSuccessStore(clock);
 * const budget = new RetryBudget({ store, clock });
 */
export class DeferredSuccessStore implements BudgetStore {
  readonly remote = false;
  readonly #clock: Clock;
  /** The time the inner store reads: now, or a logged write's time while it is applied. */
  #at = 0;
  readonly #inner: MemoryBudgetStore;
  readonly #logs = new Map<string, SuccessLog>();
  /** The settings of the first write, and the store's answer to a write with them. */
  #settings: { window: BudgetWindow; answer: StoreWrite } | undefined;
  /** True once a write carried other settings: writes are then applied at once. */
  #mixed = false;
  #sweepAtSize = SWEEP_MIN_SIZE;

  constructor(clock: Clock) {
    this.#clock = clock;
    this.#inner = new MemoryBudgetStore({ clock: { now: () => this.#at } });
  }

  trySpend(
    dependency: string,
    window: BudgetWindow,
    successes: readonly AgedSuccesses[],
    count: number,
  ): StoreSpend {
    const now = this.#applyLog(dependency);
    this.#noteSettings(window);
    const spend = this.#inner.trySpend(dependency, window, successes, count);
    this.#wrote(dependency, now);
    return spend;
  }

  /** Logs the write, answered with the settings it carries (which govern: they are the only ones written). */
  addSuccesses(dependency: string, successes: readonly AgedSuccesses[], window: BudgetWindow): StoreWrite {
    this.#noteSettings(window);
    const settings = this.#settings as { answer: StoreWrite };
    if (this.#mixed) {
      const now = this.#applyLog(dependency);
      const answer = this.#inner.addSuccesses(dependency, successes, window);
      this.#wrote(dependency, now);
      return answer;
    }
    const now = this.#clock.now();
    const log = this.#wrote(dependency, now);
    if (log.writes === undefined) log.writes = [];
    const writes = log.writes;
    let at = log.used;
    writes[at++] = now;
    writes[at++] = successes.length;
    for (const { ageMs, count } of successes) {
      writes[at++] = ageMs;
      writes[at++] = count;
    }
    log.used = at;
    if (++log.count >= LOG_LIMIT) this.#applyLog(dependency);
    return settings.answer;
  }

  /**
   * `addSuccesses(dependency, [{ ageMs: 0, count }], window)` with the settings of the writes so far, when
   * they are known and the only ones (true); false otherwise, and nothing is written.
   *
   * @example
   * if (!store.logSuccess('search', 1)) store.addSuccesses('search', [{ ageMs: 0, count: 1 }], window);
   */
  logSuccess(dependency: string, count: number): boolean {
    if (this.#settings === undefined || this.#mixed) return false;
    const now = this.#clock.now();
    const log = this.#wrote(dependency, now);
    if (log.count === 0) {
      log.first = true;
      log.firstAt = now;
      log.firstCount = count;
    } else {
      if (log.writes === undefined) log.writes = [];
      const writes = log.writes;
      const at = log.used;
      writes[at] = now;
      writes[at + 1] = 1;
      writes[at + 2] = 0;
      writes[at + 3] = count;
      log.used = at + 4;
    }
    if (++log.count >= LOG_LIMIT) this.#applyLog(dependency);
    return true;
  }

  read(dependency: string): StoreRead | undefined {
    this.#applyLog(dependency);
    return this.#inner.read(dependency);
  }

  dependencies(): string[] {
    for (const dependency of this.#logs.keys()) this.#applyLog(dependency);
    return this.#inner.dependencies();
  }

  ping(): void {}

  /** The first settings written are the store's; any other settings make it apply every write at once. */
  #noteSettings(window: BudgetWindow): void {
    if (this.#settings === undefined) {
      this.#settings = { window, answer: { window } };
      return;
    }
    if (this.#settings.window !== window && !this.#mixed) {
      this.#mixed = true;
      for (const dependency of this.#logs.keys()) this.#applyLog(dependency);
    }
  }

  /**
   * Applies the dependency's logged writes, each at its own time (or drops them when the store has
   * forgotten them by now), and sets the inner store's clock to now, which it returns.
   */
  #applyLog(dependency: string): number {
    const now = this.#clock.now();
    const log = this.#logs.get(dependency);
    if (log && log.count > 0) {
      const window = (this.#settings as { window: BudgetWindow }).window;
      if (log.keepUntil > now) {
        if (log.first) {
          this.#at = log.firstAt;
          this.#inner.addSuccesses(dependency, [{ ageMs: 0, count: log.firstCount }], window);
        }
        const writes = log.writes as number[];
        const used = log.used;
        let at = 0;
        while (at < used) {
          const time = writes[at] as number;
          const pairs = writes[at + 1] as number;
          const successes: AgedSuccesses[] = [];
          for (let i = 0; i < pairs; i++)
            successes.push({
              ageMs: writes[at + 2 + 2 * i] as number,
              count: writes[at + 3 + 2 * i] as number,
            });
          this.#at = time;
          this.#inner.addSuccesses(dependency, successes, window);
          at += 2 + 2 * pairs;
        }
      }
      log.first = false;
      log.used = 0;
      log.count = 0;
    }
    this.#at = now;
    return now;
  }

  /**
   * A write for `dependency` at `now`: the store keeps the state two windows past it (every write carries
   * the same settings, except once `#mixed`, when nothing is logged). A log whose writes the store has
   * forgotten by now is emptied first.
   */
  #wrote(dependency: string, now: number): SuccessLog {
    let log = this.#logs.get(dependency);
    if (!log) {
      if (this.#logs.size >= this.#sweepAtSize) this.#sweep(now);
      log = {
        first: false,
        firstAt: 0,
        firstCount: 0,
        writes: undefined,
        used: 0,
        count: 0,
        keepUntil: 0,
      };
      this.#logs.set(dependency, log);
    } else if (log.keepUntil <= now && log.count > 0) {
      log.first = false;
      log.used = 0;
      log.count = 0;
    }
    const windowMs = (this.#settings as { window: BudgetWindow }).window.windowMs;
    log.keepUntil = Math.max(log.keepUntil, now + 2 * windowMs);
    return log;
  }

  /** Forgets the logs of dependencies the store has forgotten; run when the map doubles. */
  #sweep(now: number): void {
    for (const [dependency, log] of this.#logs) if (log.keepUntil <= now) this.#logs.delete(dependency);
    this.#sweepAtSize = Math.max(SWEEP_MIN_SIZE, 2 * this.#logs.size);
  }
}
