import { seededRandom } from '../../common/random.js';
import type { ArrivalSpec } from '../scenario/schema.js';

/**
 * Where a run's jobs come from: backlogs (a number of jobs queued at one moment, delivered by the engine as a
 * single heap event) and Poisson streams (a rate per second between two times). A stream's arrivals come out
 * in time order, so they bypass the event heap: the engine merges the stream due soonest with the heap's
 * earliest event. Each source draws from its own seeded random stream, so every strategy of a simulation
 * sees the same arrivals.
 */
export class ArrivalStreams {
  readonly #backlog: Int32Array;
  readonly #at: Float64Array;
  readonly #rate: Float64Array;
  readonly #until: Float64Array;
  readonly #jobClass: Int32Array;
  readonly #random: (() => number)[];
  readonly #next: Float64Array;
  /** Sources that may still deliver jobs. */
  active: number;
  /** The stream due next (-1 when none) and when (`Infinity` when none). */
  soonest = -1;
  soonestAt = Number.POSITIVE_INFINITY;

  constructor(specs: readonly ArrivalSpec[], classNames: readonly string[], seeds: readonly number[]) {
    const n = specs.length;
    this.#backlog = new Int32Array(n);
    this.#at = new Float64Array(n);
    this.#rate = new Float64Array(n);
    this.#until = new Float64Array(n);
    this.#jobClass = new Int32Array(n);
    this.#random = specs.map((_, i) => seededRandom(seeds[i] ?? i));
    this.#next = new Float64Array(n).fill(Number.POSITIVE_INFINITY);
    this.active = n;
    specs.forEach((spec, i) => {
      this.#backlog[i] = spec.backlog ?? -1;
      this.#at[i] = spec.backlog !== undefined ? spec.at : spec.from;
      this.#rate[i] = spec.rate ?? 0;
      this.#until[i] = spec.until ?? 0;
      this.#jobClass[i] = classNames.indexOf(spec.class);
      if (spec.backlog === undefined) this.advance(i, spec.from);
    });
  }

  get size(): number {
    return this.#backlog.length;
  }

  /** Jobs a backlog source delivers at once; -1 for a stream. */
  backlogOf(source: number): number {
    return this.#backlog[source] as number;
  }

  /** When a backlog source delivers its jobs. */
  atOf(source: number): number {
    return this.#at[source] as number;
  }

  /** The job class (index) a source's jobs belong to. */
  jobClassOf(source: number): number {
    return this.#jobClass[source] as number;
  }

  /** A backlog has been delivered: one source fewer. */
  delivered(): void {
    this.active--;
  }

  /** Draws a stream's next arrival after `from` (exponential gaps), or ends the stream past `until`. */
  advance(source: number, from: number): void {
    const next =
      from +
      (-Math.log(1 - (this.#random[source] as () => number)()) * 1_000) / (this.#rate[source] as number);
    if (next < (this.#until[source] as number)) this.#next[source] = next;
    else {
      this.#next[source] = Number.POSITIVE_INFINITY;
      this.active--;
    }
    this.#findSoonest();
  }

  #findSoonest(): void {
    this.soonest = -1;
    this.soonestAt = Number.POSITIVE_INFINITY;
    // Few sources: a scan is cheapest.
    for (let i = 0; i < this.#next.length; i++)
      if ((this.#next[i] as number) < this.soonestAt) {
        this.soonest = i;
        this.soonestAt = this.#next[i] as number;
      }
  }
}
