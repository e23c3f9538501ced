/**
 * A time series in fixed-size bins (bin i covers `[i × binMs, (i + 1) × binMs)`), growing as virtual time
 * advances. Counters add into their bin; gauges keep the last value set in a bin and carry it forward over
 * bins where nothing was set. Both allocate only when they double their capacity.
 */
export class BinnedSeries {
  #data: Float64Array;
  #length = 0;

  constructor(
    readonly binMs: number,
    readonly kind: 'counter' | 'gauge' = 'counter',
    initialBins = 256,
  ) {
    this.#data = new Float64Array(initialBins);
    if (kind === 'gauge') this.#data.fill(Number.NaN);
  }

  /** Bins up to and including the last one written. */
  get length(): number {
    return this.#length;
  }

  /** Counter: adds `n` to the bin holding `t`. */
  add(t: number, n = 1): void {
    const i = this.#index(t);
    this.#data[i] = (this.#data[i] as number) + n;
  }

  /** Gauge: the bin holding `t` takes `value` (the last write in a bin wins). */
  set(t: number, value: number): void {
    this.#data[this.#index(t)] = value;
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
    const out = new Array<number>(bins);
    let carried = 0;
    for (let i = 0; i < bins; i++) {
      const v = i < this.#length ? (this.#data[i] as number) : Number.NaN;
      if (this.kind === 'gauge') {
        if (!Number.isNaN(v)) carried = v;
        out[i] = carried;
      } else out[i] = Number.isNaN(v) ? 0 : v;
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
    let capacity = this.#data.length * 2;
    while (capacity < minimum) capacity *= 2;
    const data = new Float64Array(capacity);
    if (this.kind === 'gauge') data.fill(Number.NaN);
    data.set(this.#data);
    this.#data = data;
  }
}
