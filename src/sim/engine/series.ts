/** The longest array `toArray` preallocates (see there). */
const PREALLOCATED_BINS = 1 << 24;

/**
 * A time series in fixed-size bins (bin i covers `[i × binMs, (i + 1) × binMs)`), growing as virtual time
 * advances. Counters add whole counts into their bin (four bytes a bin: a simulated day of 50 dependencies
 * is millions of bins); gauges keep the last value set in a bin and carry it forward over bins where nothing
 * was set. Both start with the bins the run is expected to reach (`initialBins`) and grow by half their
 * capacity past it, so a long run holds at most a third more bins than it reached.
 */
export class BinnedSeries {
  #data: Float64Array | Uint32Array;
  #length = 0;

  constructor(
    readonly binMs: number,
    readonly kind: 'counter' | 'gauge' = 'counter',
    initialBins = 256,
  ) {
    this.#data = BinnedSeries.#allocate(kind, initialBins);
  }

  /** Bins up to and including the last one written. */
  get length(): number {
    return this.#length;
  }

  /** Counter: adds `n` (a whole count) to the bin holding `t`. */
  add(t: number, n = 1): void {
    const i = this.#index(t);
    this.#data[i] = (this.#data[i] as number) + n;
  }

  /** Gauge: the bin holding `t` takes `value` (the last write in a bin wins). */
  set(t: number, value: number): void {
    // The index first: it may grow (replace) the array, which must then be the one written. Bins skipped
    // since the last one written are marked unset here, not when allocated: memory is touched as it is used.
    const before = this.#length;
    const i = this.#index(t);
    if (i > before) this.#data.fill(Number.NaN, before, i);
    this.#data[i] = value;
  }

  /** The value of bin `i` (a gauge carries earlier values forward; 0 before its first value). */
  at(i: number): number {
    if (this.kind === 'counter') return i < this.#length ? (this.#data[i] as number) : 0;
    for (let j = Math.min(i, this.#length - 1); j >= 0; j--) {
      const v = this.#data[j] as number;
      if (!Number.isNaN(v)) return v;
    }
    return 0;
  }

  /** The first `bins` values as a plain array (padded with 0, or a gauge's last value). */
  toArray(bins = this.#length): number[] {
    // Filled to its length first, then written: three times cheaper than pushing a day of bins one by one.
    // (Past 2^24 bins it is pushed: V8 would keep a larger preallocated array in slow elements.)
    const out: number[] = bins <= PREALLOCATED_BINS ? new Array<number>(bins).fill(0) : [];
    const data = this.#data;
    const written = Math.min(bins, this.#length);
    if (this.kind === 'gauge') {
      let carried = 0;
      for (let i = 0; i < written; i++) {
        const v = data[i] as number;
        if (!Number.isNaN(v)) carried = v;
        out[i] = carried;
      }
      for (let i = written; i < bins; i++) out[i] = carried;
    } else {
      for (let i = 0; i < written; i++) out[i] = data[i] as number;
      for (let i = written; i < bins; i++) out[i] = 0;
    }
    return out;
  }

  /** The sum of every bin. */
  total(): number {
    let sum = 0;
    for (let i = 0; i < this.#length; i++) sum += this.#data[i] as number;
    return sum;
  }

  #index(t: number): number {
    const i = Math.floor(t / this.binMs);
    if (i >= this.#data.length) this.#grow(i + 1);
    if (i >= this.#length) this.#length = i + 1;
    return i;
  }

  #grow(minimum: number): void {
    const data = BinnedSeries.#allocate(this.kind, Math.max(minimum, Math.ceil(this.#data.length * 1.5)));
    data.set(this.#data);
    this.#data = data;
  }

  static #allocate(kind: 'counter' | 'gauge', bins: number): Float64Array | Uint32Array {
    // Zeroed, as the system hands memory out; a gauge's unset bins are marked NaN by `set` as it reaches them.
    return kind === 'gauge' ? new Float64Array(bins) : new Uint32Array(bins);
  }
}
