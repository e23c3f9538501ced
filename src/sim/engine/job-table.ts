/**
 * Every simulated job, one row per job in parallel typed arrays (no object per job): a million jobs cost a
 * few dozen megabytes and nothing for the garbage collector to trace.
 */
export class JobTable {
  #capacity: number;
  size = 0;
  /** Index of the job's class in the scenario's class list. */
  jobClass: Uint16Array;
  /** When the job was created (virtual ms), for `maxAge`. */
  createdAt: Float64Array;
  /** Attempts run so far, including any that did not charge the ceiling. */
  attempts: Uint16Array;
  /** Attempts that count against `maxAttempts` (a budget deferral or an open breaker gives one back). */
  charged: Uint16Array;
  /** 1 once the job has sent a request (a breaker may refuse its first attempts). */
  sent: Uint8Array;
  /**
   * 1 while the job holds a retry its budget granted and has not yet sent. A job rescheduled any other way
   * (a budget deferral, an open breaker) holds none, so it asks the budget before its retry calls anything.
   */
  granted: Uint8Array;
  /** The last retry's delay, for decorrelated jitter; NaN before the first retry. */
  previousDelay: Float64Array;

  constructor(initialCapacity = 4096) {
    this.#capacity = initialCapacity;
    this.jobClass = new Uint16Array(initialCapacity);
    this.createdAt = new Float64Array(initialCapacity);
    this.attempts = new Uint16Array(initialCapacity);
    this.charged = new Uint16Array(initialCapacity);
    this.previousDelay = new Float64Array(initialCapacity);
    this.sent = new Uint8Array(initialCapacity);
    this.granted = new Uint8Array(initialCapacity);
  }

  /** Adds a job and returns its number. */
  add(jobClass: number, createdAt: number): number {
    if (this.size === this.#capacity) this.#grow();
    const id = this.size++;
    this.jobClass[id] = jobClass;
    this.createdAt[id] = createdAt;
    this.previousDelay[id] = Number.NaN;
    return id;
  }

  #grow(): void {
    const capacity = this.#capacity * 2;
    const widen = <T extends Uint8Array | Uint16Array | Float64Array>(old: T, make: (n: number) => T): T => {
      const next = make(capacity);
      next.set(old);
      return next;
    };
    this.jobClass = widen(this.jobClass, (n) => new Uint16Array(n));
    this.createdAt = widen(this.createdAt, (n) => new Float64Array(n));
    this.attempts = widen(this.attempts, (n) => new Uint16Array(n));
    this.charged = widen(this.charged, (n) => new Uint16Array(n));
    this.previousDelay = widen(this.previousDelay, (n) => new Float64Array(n));
    this.sent = widen(this.sent, (n) => new Uint8Array(n));
    this.granted = widen(this.granted, (n) => new Uint8Array(n));
    this.#capacity = capacity;
  }
}
