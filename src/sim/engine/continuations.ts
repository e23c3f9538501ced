const RESOLVED = Promise.resolve();

/**
 * The continuations of calls whose answer was there at once (a breaker on an in-process store), run where
 * the continuation of the awaited call would have run: `after(turns, fn)` runs `fn` as the last reaction
 * of a chain of `turns` promise reactions started now would, so the simulation keeps the order the awaited
 * calls give, event for event, without a promise per call.
 *
 * While no real promise chain is under way they run from this queue, synchronously, in the microtask
 * queue's order (first in, first out, one turn per pass). Before code starts a real chain (`decide`,
 * `admit`, a budget flush) it calls {@link beforePromise}: the queued continuations move to the microtask
 * queue, in order, ahead of the chain's own reactions, and later ones go there too until {@link settled}
 * has seen them all run.
 */
export class Continuations {
  // A queue in two arrays read from `#head` to `#tail`; emptied by resetting both (the slots are reused).
  readonly #turns: number[] = [];
  readonly #fns: (() => void)[] = [];
  #head = 0;
  #tail = 0;
  /** True once a real chain may be under way: continuations then go to the microtask queue. */
  #onMicrotasks = false;
  #inFlight = 0;
  #drained: (() => void) | undefined;
  #error: unknown;

  /** Continuations waiting in the microtask queue. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Runs `fn` `turns` (≥ 1) microtask turns from now, as seen by the promise chains around it. */
  after(turns: number, fn: () => void): void {
    if (this.#onMicrotasks) {
      this.#inFlight++;
      this.#hop(turns, fn);
      return;
    }
    this.#push(turns, fn);
  }

  /** Runs the queued continuations, and those they queue, until none is left or one starts a real chain. */
  run(): void {
    if (this.#tail === 0) return;
    while (this.#head < this.#tail) {
      const i = this.#head++;
      const turns = this.#turns[i] as number;
      const fn = this.#fns[i] as () => void;
      if (turns > 1) this.#push(turns - 1, fn);
      else fn();
    }
    this.#head = 0;
    this.#tail = 0;
  }

  /** Call just before starting a real promise chain: what is queued moves to the microtask queue first. */
  beforePromise(): void {
    if (this.#onMicrotasks) return;
    this.#onMicrotasks = true;
    for (let i = this.#head; i < this.#tail; i++) {
      this.#inFlight++;
      this.#hop(this.#turns[i] as number, this.#fns[i] as () => void);
    }
    this.#head = 0;
    this.#tail = 0;
  }

  /**
   * Resolves once every continuation in the microtask queue has run (those they start included); an error
   * one of them throws is kept for {@link settled}.
   */
  drained(): Promise<void> {
    if (this.#inFlight === 0) return RESOLVED;
    return new Promise((resolve) => {
      this.#drained = resolve;
    });
  }

  /** Everything has settled: continuations are queued here again. Throws the first error one threw. */
  settled(): void {
    this.#onMicrotasks = false;
    this.#drained = undefined;
    if (this.#error !== undefined) {
      const error = this.#error;
      this.#error = undefined;
      throw error;
    }
  }

  #push(turns: number, fn: () => void): void {
    this.#turns[this.#tail] = turns;
    this.#fns[this.#tail] = fn;
    this.#tail++;
  }

  #hop(turns: number, fn: () => void): void {
    void RESOLVED.then(() => {
      if (turns > 1) {
        this.#hop(turns - 1, fn);
        return;
      }
      try {
        fn();
      } catch (error) {
        this.#error ??= error;
      }
      if (--this.#inFlight === 0) this.#drained?.();
    });
  }
}
