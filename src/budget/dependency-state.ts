import { Ring, type RingSums } from './ring.js';
import type { StoreRead, StoreSpend, StoreWrite } from './store.js';
import { type AgedSuccesses, allowanceFor, type BudgetWindow, sameSettings } from './window.js';

interface Pending {
  ring: Ring;
  /** The bucket (of the pending settings) its ring started recording in. */
  startBucket: number;
}

/**
 * One dependency's budget in memory: the governing settings' ring and, while a change is in progress,
 * the pending settings' ring. Implements the rules of window.ts (the Redis scripts mirror them).
 */
export class DependencyState {
  #ring: Ring;
  #pending: Pending | undefined;
  #applied: StoreWrite;

  constructor(window: BudgetWindow) {
    this.#ring = new Ring(window);
    this.#applied = { window };
  }

  /** The governing settings. */
  get window(): BudgetWindow {
    return this.#ring.window;
  }

  /**
   * Applies `caller`'s settings (see window.ts), adds the aged successes, decides `count` retries one
   * after another and records them, all at `now`.
   */
  write(now: number, caller: BudgetWindow, successes: readonly AgedSuccesses[], count: number): StoreSpend {
    this.#promote(now);
    this.#propose(now, caller);
    // The hot path of every in-process decision: no allocation but the reply.
    const ring = this.#ring;
    const current = ring.advance(now);
    if (successes.length > 0) ring.addSuccesses(successes, now, current);
    const sums = ring.sums(now, current);
    const { successes: total, spent, denied } = sums;
    const allowance = allowanceFor(total, ring.window.ratioPpm, ring.window.minAllowance);
    let room = Math.max(0, allowance - spent);
    const pending = this.#pending;
    let pendingCurrent = 0;
    if (pending) {
      pendingCurrent = pending.ring.advance(now);
      if (successes.length > 0) pending.ring.addSuccesses(successes, now, pendingCurrent);
      const p = pending.ring.sums(now, pendingCurrent);
      const pendingAllowance = allowanceFor(
        p.successes,
        pending.ring.window.ratioPpm,
        pending.ring.window.minAllowance,
      );
      room = Math.min(room, Math.max(0, pendingAllowance - p.spent));
    }
    const granted = Math.min(count, room);
    if (count > 0) {
      ring.addDecisions(granted, count - granted, current);
      pending?.ring.addDecisions(granted, count - granted, pendingCurrent);
    }
    const reply: StoreSpend = {
      granted,
      allowance: Math.min(allowance, spent + room),
      spent: spent + granted,
      denied: denied + count - granted,
      successes: total,
      window: ring.window,
    };
    if (pending) reply.pending = pending.ring.window;
    return reply;
  }

  /**
   * Applies `caller`'s settings and adds the aged successes at `now`, without summing anything (the
   * success path). Returns the settings applied, in an object shared until they change.
   */
  record(now: number, caller: BudgetWindow, successes: readonly AgedSuccesses[]): StoreWrite {
    this.#promote(now);
    this.#propose(now, caller);
    this.#ring.addSuccesses(successes, now, this.#ring.advance(now));
    const pending = this.#pending;
    if (pending) pending.ring.addSuccesses(successes, now, pending.ring.advance(now));
    if (this.#applied.window !== this.#ring.window || this.#applied.pending !== pending?.ring.window)
      this.#applied = pending
        ? { window: this.#ring.window, pending: pending.ring.window }
        : { window: this.#ring.window };
    return this.#applied;
  }

  /** The counts at `now` without changing anything (a pending change that is due is applied in the view). */
  read(now: number): StoreRead {
    if (this.#pending === undefined) {
      // One ring, the common case (and the simulator's per-second sampling): no arrays, no copies.
      const ring = this.#ring;
      const { successes, spent, denied } = ring.sums(now, ring.currentAt(now));
      const allowance = allowanceFor(successes, ring.window.ratioPpm, ring.window.minAllowance);
      return {
        allowance: Math.min(allowance, spent + Math.max(0, allowance - spent)),
        spent,
        denied,
        successes,
        window: ring.window,
      };
    }
    const due = this.#pending && this.#due(this.#pending, now);
    const rings = due
      ? [this.#pending!.ring]
      : this.#pending
        ? [this.#ring, this.#pending.ring]
        : [this.#ring];
    let room = Number.POSITIVE_INFINITY;
    let governing: (RingSums & { allowance: number }) | undefined;
    for (const ring of rings) {
      const sums = ring.sums(now, ring.currentAt(now));
      const allowance = allowanceFor(sums.successes, ring.window.ratioPpm, ring.window.minAllowance);
      room = Math.min(room, Math.max(0, allowance - sums.spent));
      governing ??= { ...sums, allowance };
    }
    const g = governing!;
    const read: StoreRead = {
      allowance: Math.min(g.allowance, g.spent + room),
      spent: g.spent,
      denied: g.denied,
      successes: g.successes,
      window: rings[0]!.window,
    };
    if (!due && this.#pending) read.pending = this.#pending.ring.window;
    return read;
  }

  /** A caller with a higher version than the governing (and the pending) settings starts a change. */
  #propose(now: number, caller: BudgetWindow): void {
    if (sameSettings(caller, this.#ring.window) || caller.version <= this.#ring.window.version) return;
    if (this.#pending && caller.version <= this.#pending.ring.window.version) return;
    const ring = new Ring(caller);
    this.#pending = { ring, startBucket: ring.currentAt(now) };
  }

  /** The pending settings take over once their ring holds a whole window of its own. */
  #promote(now: number): void {
    if (this.#pending && this.#due(this.#pending, now)) {
      this.#ring = this.#pending.ring;
      this.#pending = undefined;
    }
  }

  #due(pending: Pending, now: number): boolean {
    return pending.ring.currentAt(now) - pending.startBucket >= pending.ring.window.buckets + 1;
  }
}
