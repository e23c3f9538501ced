import { IntQueue } from './int-queue.js';

/**
 * The idle worker slots, first in, first out: slots never used yet come out first, in order (slot `s`
 * belongs to worker `s % workers`, so consecutive slots are on different workers), then slots handed back,
 * in the order they were. Never-used slots are a counter, not a list, so a fleet of a million slots running
 * ten jobs costs what ten slots cost.
 */
export class SlotPool {
  #fresh = 0;
  readonly #returned = new IntQueue(1024);

  constructor(readonly capacity: number) {}

  /** Idle slots. */
  get size(): number {
    return this.capacity - this.#fresh + this.#returned.size;
  }

  /** Slots that have ever taken a job. */
  get used(): number {
    return this.#fresh;
  }

  /** Takes the slot idle longest; -1 when every slot is busy. */
  shift(): number {
    if (this.#fresh < this.capacity) return this.#fresh++;
    return this.#returned.shift();
  }

  /** A busy slot is idle again. */
  push(slot: number): void {
    this.#returned.push(slot);
  }
}
