/**
 * A first-in, first-out queue of non-negative integers in a ring buffer: the simulator's waiting list and
 * idle-slot list. Allocates only when it doubles its capacity.
 */
export class IntQueue {
  #items: Int32Array;
  #head = 0;
  #size = 0;

  constructor(initialCapacity = 1024) {
    this.#items = new Int32Array(Math.max(2, initialCapacity));
  }

  get size(): number {
    return this.#size;
  }

  push(value: number): void {
    if (this.#size === this.#items.length) this.#grow();
    this.#items[(this.#head + this.#size) % this.#items.length] = value;
    this.#size++;
  }

  /** Removes and returns the oldest value; -1 when empty. */
  shift(): number {
    if (this.#size === 0) return -1;
    const value = this.#items[this.#head] as number;
    this.#head = (this.#head + 1) % this.#items.length;
    this.#size--;
    return value;
  }

  #grow(): void {
    const items = new Int32Array(this.#items.length * 2);
    for (let i = 0; i < this.#size; i++)
      items[i] = this.#items[(this.#head + i) % this.#items.length] as number;
    this.#items = items;
    this.#head = 0;
  }
}
