import type { BudgetSampler } from './budget-sampler.js';
import type { EventQueue } from './event-queue.js';
import { TICK } from './events.js';
import { BIN_MS } from './recorder.js';

/** How often the engine flushes budgets and samples them, in virtual time (the retry budget's flush bound). */
export const TICK_MS = 250;

/**
 * The budgets' clock: a tick every {@link TICK_MS} of virtual time flushes them, and the first tick of each
 * bin samples them. Ticks run while work is pending and a budget can still change; after a quiet spell
 * they stop, so the clock jumps to the next event instead of stepping through idle time, and the next
 * event starts them again on their grid. Only budgets need ticks: a strategy without one has none.
 *
 * @example
 * const ticks = new BudgetTicks(queue, sampler, quietMs, () => workPending());
 * ticks.start(); // before the first event
 */
export class BudgetTicks {
  #lastSampledBin = -1;
  /** Virtual time of the last event that was not a tick. */
  #lastActivity = 0;
  /** Whether a tick is scheduled. */
  #ticking = false;

  constructor(
    private readonly queue: EventQueue,
    private readonly sampler: BudgetSampler,
    /** How long after the last event the budgets are still flushed and sampled. */
    private readonly quietMs: number,
    /** True while anything can still happen: arrivals to come, jobs waiting, running, delayed or parked. */
    private readonly working: () => boolean,
  ) {}

  /** Schedules the first tick, at time 0. */
  start(): void {
    this.#ticking = true;
    this.queue.push(0, TICK);
  }

  /** An event that is not a tick happened at `t`: ticks resume if they had stopped. */
  activity(t: number): void {
    this.#lastActivity = t;
    if (!this.#ticking) this.#resume(t);
  }

  /** The tick at `t`: flush, sample once per bin, and schedule the next tick while it can matter. */
  tick(t: number): Promise<void> | undefined {
    const bin = Math.floor(t / BIN_MS);
    const sample = bin !== this.#lastSampledBin;
    if (sample) this.#lastSampledBin = bin;
    const pending = this.sampler.flushAndSample(t, sample);
    if (this.working() && t - this.#lastActivity < this.quietMs) this.queue.push(t + TICK_MS, TICK);
    else this.#ticking = false;
    return pending;
  }

  /**
   * The first event after a quiet spell starts the ticks again, on their grid (the first tick at or after
   * the event, as they would have been). Its bin was sampled, while nothing moved, at the bin's first tick:
   * that value is carried forward, so the bin is marked sampled.
   */
  #resume(t: number): void {
    this.#ticking = true;
    this.#lastSampledBin = Math.max(this.#lastSampledBin, Math.floor(t / BIN_MS));
    this.queue.push(Math.ceil(t / TICK_MS) * TICK_MS, TICK);
  }
}
