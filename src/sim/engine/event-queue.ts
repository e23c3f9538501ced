/**
 * A 4-ary min-heap of timed events for the simulator (half the depth of a binary heap, and a node's children
 * sit side by side in memory), stored in parallel typed arrays so that pushing and
 * popping allocate nothing: a run of millions of events must not feed the garbage collector.
 *
 * Events at the same time pop in the order they were pushed (a sequence number breaks ties), which keeps
 * runs deterministic. An event is a time and one non-negative integer payload; callers pack what they need
 * into it (see `engine.ts`).
 */
export class EventQueue {
  #times: Float64Array;
  #seqs: Float64Array;
  #payloads: Int32Array;
  #size = 0;
  #nextSeq = 0;

  constructor(initialCapacity = 1024) {
    this.#times = new Float64Array(initialCapacity);
    this.#seqs = new Float64Array(initialCapacity);
    this.#payloads = new Int32Array(initialCapacity);
  }

  get size(): number {
    return this.#size;
  }

  /** The earliest event's time; `Infinity` when empty. */
  peekTime(): number {
    return this.#size === 0 ? Number.POSITIVE_INFINITY : (this.#times[0] as number);
  }

  push(time: number, payload: number): void {
    if (this.#size === this.#times.length) this.#grow();
    const times = this.#times;
    const seqs = this.#seqs;
    const payloads = this.#payloads;
    const seq = this.#nextSeq++;
    let i = this.#size++;
    // Sift up: move parents down until the new event's place is found.
    while (i > 0) {
      const parent = (i - 1) >> 2;
      const pt = times[parent] as number;
      if (pt < time || (pt === time && (seqs[parent] as number) < seq)) break;
      times[i] = pt;
      seqs[i] = seqs[parent] as number;
      payloads[i] = payloads[parent] as number;
      i = parent;
    }
    times[i] = time;
    seqs[i] = seq;
    payloads[i] = payload;
  }

  /** Removes the earliest event and returns its payload (read its time with `peekTime` first). */
  pop(): number {
    if (this.#size === 0) throw new RangeError('EventQueue.pop: the queue is empty');
    const times = this.#times;
    const seqs = this.#seqs;
    const payloads = this.#payloads;
    const top = payloads[0] as number;
    const last = --this.#size;
    if (last === 0) return top;
    const time = times[last] as number;
    const seq = seqs[last] as number;
    const payload = payloads[last] as number;
    let i = 0;
    // Sift down: move the earliest child up until the last event's place is found.
    for (;;) {
      const first = 4 * i + 1;
      if (first >= last) break;
      let child = first;
      let ct = times[first] as number;
      let cs = seqs[first] as number;
      const end = Math.min(first + 4, last);
      for (let c = first + 1; c < end; c++) {
        const t = times[c] as number;
        if (t < ct || (t === ct && (seqs[c] as number) < cs)) {
          child = c;
          ct = t;
          cs = seqs[c] as number;
        }
      }
      if (time < ct || (time === ct && seq < cs)) break;
      times[i] = ct;
      seqs[i] = cs;
      payloads[i] = payloads[child] as number;
      i = child;
    }
    times[i] = time;
    seqs[i] = seq;
    payloads[i] = payload;
    return top;
  }

  #grow(): void {
    const capacity = this.#times.length * 2;
    const times = new Float64Array(capacity);
    const seqs = new Float64Array(capacity);
    const payloads = new Int32Array(capacity);
    times.set(this.#times);
    seqs.set(this.#seqs);
    payloads.set(this.#payloads);
    this.#times = times;
    this.#seqs = seqs;
    this.#payloads = payloads;
  }
}
