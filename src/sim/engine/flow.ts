import type { BudgetSnapshot } from '../../budget/types.js';
import type { Clock } from '../../common/clock.js';
import { type DependencyHealth, flowVerdict, type HoldKind } from '../../runtime/flow-control/gate.js';
import { MemoryFlowStore } from '../../runtime/flow-control/memory-store.js';
import { budgetStoppedDenying, type SlowStartRamp } from '../../runtime/flow-control/slow-start.js';

/**
 * Flow control's settings in the simulator, with the worker's meaning (`FlowControlOptions`): the
 * slow-start ramp after a recovery, how long a worker waits for its paced slot before it gives the job
 * back, how long a job is held while the half-open breaker's probes are all in flight, and how parked jobs
 * are released.
 */
export interface FlowSettings extends SlowStartRamp {
  probeWaitMs: number;
  maxPaceWaitMs: number;
  releaseIntervalMs: number;
  releaseBatch: number;
  /** Probes the breaker admits per half-open period (the breaker's `halfOpenProbes`). */
  halfOpenProbes: number;
}

/** What the breaker last told the fleet about a dependency (any snapshot an operation returned). */
interface Known {
  state: 'closed' | 'open' | 'half-open';
  halfOpenAtMs: number | undefined;
  probesInFlight: number;
}

/**
 * The gate's answer for the job at the head of the queue, in the worker's terms (`FlowAction`).
 * - `run`: take it; its call starts `waitMs` later (the paced slot it reserved).
 * - `pause`: the queue's one dependency is held: the job was fetched and put back, and the queue stops
 *   (BullMQ's rate limit) until the flow wakes it.
 * - `paused`: the queue is already stopped: nothing is fetched.
 * - `park`: in a queue that mixes dependencies, this job is set aside until its dependency is released.
 * - `delay`: its paced slot is too far away: the job is delayed `forMs` without charging anything.
 */
export type FlowAnswer =
  | { type: 'run'; waitMs: number }
  | { type: 'pause' | 'paused' | 'park' }
  | { type: 'delay'; forMs: number };

const PAUSED: FlowAnswer = Object.freeze({ type: 'paused' });
const PAUSE: FlowAnswer = Object.freeze({ type: 'pause' });
const PARK: FlowAnswer = Object.freeze({ type: 'park' });
const RUN_NOW: FlowAnswer = Object.freeze({ type: 'run', waitMs: 0 });
/** The shortest hold, as the worker's flow controller holds (no busy loop on a breaker about to half-open). */
const MIN_HOLD_MS = 50;

/**
 * One strategy's flow control over the simulated fleet. The fleet-wide state (down marks, the recovery
 * time that starts slow start, the GCRA pacer, park lists and released marks) lives in stormguard's own
 * `MemoryFlowStore` on the run's virtual clock, and every hold is `flowVerdict`'s: this class keeps only
 * what a worker keeps locally (the breaker as it last read it, a paused queue's end), and asks the engine
 * to wake a dependency (`wake`) when a hold ends or a release is due.
 *
 * A queue whose jobs all need one dependency is paused (`kind: 'pause'`); a queue that mixes dependencies
 * parks the held jobs (`kind: 'park'`) and releases them first in, first out, paced by slow start.
 */
export class SimFlowControl {
  readonly #store: MemoryFlowStore;
  readonly #known: Known[];
  /**
   * Gate runs granted in half-open whose breaker admission has not answered yet (probes on their way), and
   * when the last was granted: a reservation older than `probeWaitMs` has lapsed (its job was refused
   * before it asked the breaker).
   */
  readonly #reserved: number[];
  readonly #reservedAt: number[];
  readonly #pausedUntil: number[];
  readonly #wakeAt: number[];
  readonly #parked: number[];
  /** Per dependency: its budget's denials marked it down, and it waits for the budget to stop denying. */
  readonly #budgetDown: boolean[];
  /**
   * Per dependency, every time a ramp began: its breaker closed after being open, or its budget stopped
   * denying.
   */
  readonly rampStarts: number[][];

  constructor(
    readonly kind: HoldKind,
    private readonly dependencies: readonly string[],
    private readonly queue: string,
    private readonly settings: FlowSettings,
    clock: Clock,
    /** Asks the engine for a wake-up of dependency `d` at `atMs` (it then calls {@link onWake}). */
    private readonly wake: (d: number, atMs: number) => void,
  ) {
    const n = dependencies.length;
    this.#store = new MemoryFlowStore({ clock });
    this.#known = Array.from({ length: n }, () => ({
      state: 'closed',
      halfOpenAtMs: undefined,
      probesInFlight: 0,
    }));
    this.#reserved = new Array(n).fill(0);
    this.#reservedAt = new Array(n).fill(Number.NEGATIVE_INFINITY);
    this.#pausedUntil = new Array(n).fill(Number.NEGATIVE_INFINITY);
    this.#wakeAt = new Array(n).fill(Number.POSITIVE_INFINITY);
    this.#parked = new Array(n).fill(0);
    this.#budgetDown = new Array(n).fill(false);
    this.rampStarts = Array.from({ length: n }, () => []);
  }

  /** All parked jobs not yet released (for the engine's end-of-run accounting). */
  get parked(): number {
    let n = 0;
    for (const count of this.#parked) n += count;
    return n;
  }

  /**
   * May a worker take a job of `d` now? `flowVerdict` with what the breaker last said; then, while the
   * dependency recovers (or under a ceiling), a paced slot from the store's pacer, waited for when it is at
   * most `maxPaceWaitMs` away. A hold asks the engine to wake the dependency when it ends.
   */
  gate(d: number, t: number): FlowAnswer {
    if (this.kind === 'pause' && t < (this.#pausedUntil[d] as number)) return PAUSED;
    const health = this.#health(d, t);
    const verdict = flowVerdict(health, {
      kind: this.kind,
      probeWaitMs: this.settings.probeWaitMs,
      minHoldMs: MIN_HOLD_MS,
    });
    if (verdict.action === 'hold') return this.#hold(d, t, verdict.forMs);
    if (health.state === 'half-open') {
      this.#reserve(d, t, 1);
      return RUN_NOW;
    }
    if (!this.#paces(d, t)) return RUN_NOW;
    const slot = this.#store.admit(this.#name(d), this.settings, this.settings.maxPaceWaitMs);
    if (slot.granted) return slot.waitMs > 0 ? { type: 'run', waitMs: slot.waitMs } : RUN_NOW;
    const forMs = Math.max(MIN_HOLD_MS, slot.waitMs);
    if (this.kind === 'park') return { type: 'delay', forMs };
    return this.#hold(d, t, forMs);
  }

  /** True (once) for a job a release brought back: its release was its slot, it runs at once. */
  passes(d: number, job: number): boolean {
    return this.#store.claimReleased(this.#name(d), this.queue, String(job));
  }

  /** Sets a held job of a mixed queue aside, in order, on the dependency's park list. */
  park(d: number, job: number): void {
    this.#store.park(this.#name(d), this.queue, String(job));
    this.#parked[d] = (this.#parked[d] as number) + 1;
  }

  /**
   * A hold of `d` ended, or a release is due: the parked jobs the release lets through now, oldest first
   * (the engine promotes them back into the queue). Half-open, only as many as there are free probe slots;
   * closed, what the ramp allows in one release interval, at most `releaseBatch`.
   */
  onWake(d: number, t: number): number[] {
    if ((this.#wakeAt[d] as number) <= t) this.#wakeAt[d] = Number.POSITIVE_INFINITY;
    if (this.#parked[d] === 0) return [];
    const health = this.#health(d, t);
    if (health.state === 'open') {
      this.#askWake(d, t + Math.max(MIN_HOLD_MS, health.halfOpenInMs ?? this.settings.probeWaitMs));
      return [];
    }
    let max = this.settings.releaseBatch;
    if (health.state === 'half-open') {
      max = Math.max(0, health.halfOpenProbes - health.probesInFlight);
      if (max === 0) {
        this.#askWake(d, t + this.settings.probeWaitMs);
        return [];
      }
    }
    const ids = this.#store.release(
      this.#name(d),
      this.queue,
      this.settings,
      max,
      this.settings.releaseIntervalMs,
    );
    if (health.state === 'half-open') this.#reserve(d, t, ids.length);
    this.#parked[d] = (this.#parked[d] as number) - ids.length;
    if ((this.#parked[d] as number) > 0 && health.state === 'closed')
      this.#askWake(d, t + this.settings.releaseIntervalMs);
    return ids.map(Number);
  }

  /**
   * What the breaker answered an operation on `d` (an admission or a recorded outcome). Open: the store's
   * down mark, and a hold until it half-opens. Closed after being open: the store's up mark, which starts
   * the fleet's slow-start ramp. Admitting again (closed, or a probe slot may be free): a pause ends now.
   */
  learn(
    d: number,
    snapshot: { state: string; halfOpenAtMs?: number; probesInFlight?: number },
    t: number,
    admission: boolean,
  ): void {
    const known = this.#known[d] as Known;
    const was = known.state;
    known.state = snapshot.state === 'open' || snapshot.state === 'half-open' ? snapshot.state : 'closed';
    known.halfOpenAtMs = snapshot.halfOpenAtMs;
    known.probesInFlight = snapshot.probesInFlight ?? 0;
    if (admission && (this.#reserved[d] as number) > 0) this.#reserved[d] = (this.#reserved[d] as number) - 1;
    if (known.state === was && known.state !== 'half-open') return;
    if (known.state === 'open') {
      this.#store.markDown(this.#name(d));
      if (known.halfOpenAtMs !== undefined) this.#askWake(d, known.halfOpenAtMs);
      return;
    }
    if (known.state === 'closed' && this.#store.read(this.#name(d)).down) this.#markUp(d);
    this.#pausedUntil[d] = Math.min(this.#pausedUntil[d] as number, t);
    this.#askWake(d, t);
  }

  /**
   * The budget denied a retry of `d` (enforced): the store's down mark, once per episode, as a worker's
   * flow controller marks it on its budget's `denied` event. The ramp starts when the budget stops denying.
   */
  budgetDenied(d: number): void {
    if (this.#budgetDown[d]) return;
    this.#budgetDown[d] = true;
    this.#store.markDown(this.#name(d));
  }

  /** True while `d` waits for its budget to stop denying: the engine then reads the budget ({@link budgetRead}). */
  awaitsBudget(d: number): boolean {
    return (this.#budgetDown[d] as boolean) && (this.#known[d] as Known).state === 'closed';
  }

  /**
   * The budget's state of `d`, read while it {@link awaitsBudget}: with no denial left in its window
   * (`budgetStoppedDenying`), the store's up mark, which starts the fleet's ramp (a breaker recovery marks
   * it up on its own, whatever the budget says).
   */
  budgetRead(d: number, snapshot: Pick<BudgetSnapshot, 'denied'>, t: number): void {
    if (!this.awaitsBudget(d) || !budgetStoppedDenying(snapshot)) return;
    if (this.#store.read(this.#name(d)).down) this.#markUp(d);
    this.#budgetDown[d] = false;
    this.#askWake(d, t);
  }

  /** The store's up mark: the fleet's slow-start ramp starts now (recorded in {@link rampStarts}). */
  #markUp(d: number): void {
    const { recoveredAtMs } = this.#store.markUp(this.#name(d));
    if (recoveredAtMs !== undefined) (this.rampStarts[d] as number[]).push(recoveredAtMs);
    this.#budgetDown[d] = false;
  }

  #name(d: number): string {
    return this.dependencies[d] as string;
  }

  /** True while attempts are paced: the ramp since the last recovery runs, or a ceiling is set. */
  #paces(d: number, t: number): boolean {
    if (this.settings.maxRatePerSecond !== undefined) return true;
    const { recoveredAtMs } = this.#store.read(this.#name(d));
    return recoveredAtMs !== undefined && t - recoveredAtMs < this.settings.slowStartMs;
  }

  #reserve(d: number, t: number, n: number): void {
    if (n === 0) return;
    this.#reserved[d] = this.#reservedNow(d, t) + n;
    this.#reservedAt[d] = t;
  }

  #reservedNow(d: number, t: number): number {
    return t - (this.#reservedAt[d] as number) < this.settings.probeWaitMs
      ? (this.#reserved[d] as number)
      : 0;
  }

  #health(d: number, t: number): DependencyHealth {
    const known = this.#known[d] as Known;
    const reserved = this.#reservedNow(d, t);
    const { halfOpenProbes } = this.settings;
    if (known.state === 'open' && known.halfOpenAtMs !== undefined && t >= known.halfOpenAtMs)
      return { state: 'half-open', probesInFlight: reserved, halfOpenProbes };
    return {
      state: known.state,
      halfOpenInMs: known.halfOpenAtMs === undefined ? undefined : known.halfOpenAtMs - t,
      probesInFlight: known.probesInFlight + reserved,
      halfOpenProbes,
    };
  }

  #hold(d: number, t: number, forMs: number): FlowAnswer {
    this.#askWake(d, t + forMs);
    if (this.kind === 'park') return PARK;
    this.#pausedUntil[d] = t + forMs;
    return PAUSE;
  }

  #askWake(d: number, atMs: number): void {
    if (atMs >= (this.#wakeAt[d] as number)) return;
    this.#wakeAt[d] = atMs;
    this.wake(d, atMs);
  }
}
