import { type TakeContext, takeVerdict } from '../../runtime/limits/limit-maths.js';
import type { DependencyLimit } from '../../runtime/limits/store.js';
import { CallOutcome, type DependencyModel } from './dependency-model.js';
import { IntQueue } from './int-queue.js';

/** The `budget-and-limits` strategy's limits: per dependency, and how it comes back after a hold. */
export interface LimitSettings {
  /** Each limited dependency's limits, by name; a dependency not named here is not limited. */
  limits: Readonly<Record<string, DependencyLimit>>;
  /** The slow-start ramp after a hold's first successful probe (a worker's `limitsOptions`). */
  slowStartMs: number;
  floorPerSecond: number;
  /** Calls let through after a hold before one succeeds (the breaker's `halfOpenProbes`; 1 without one). */
  probes: number;
}

/** One limited dependency's fleet-wide state, as a flow store keeps it, and the slots waiting for it. */
interface LimitState {
  /** What `takeVerdict` reads, updated in place. */
  readonly at: TakeContext;
  /** When the hold of the last Retry-After ends (0: never held). */
  holdUntilMs: number;
  /** Slots holding a job that waits for this dependency's limit, first come first served. */
  readonly line: IntQueue;
  /** When the line is next served (Infinity: when a call gives its slot back). */
  wakeAtMs: number;
}

/**
 * Fleet-wide limits in the simulator (the `budget-and-limits` strategy), on the runtime's own maths
 * (`takeVerdict`: the in-flight cap, the GCRA pacer, Retry-After holds, probes and the slow-start ramp).
 *
 * A slot that takes a job for a limited dependency asks for a slot before the job starts: granted, the job
 * starts at once; refused, the slot keeps the job and waits in the dependency's line, as a worker waits in
 * `ctx.call`, with no attempt charged. The line is served first come first served when the pacer's next
 * slot comes or a hold ends (one wake event per dependency, `schedule`), or when a call gives its in-flight
 * slot back. A 429 with Retry-After holds the whole dependency ({@link hold}).
 *
 * @example
 * const limits = new SimLimits(settings, ['api'], (d, atMs) => queue.push(atMs, event(LIMIT_WAKE, d)));
 * if (!limits.lineUp(d, slot, t)) start(slot); // else the slot waits until `serve` starts it
 */
export class SimLimits {
  /** Per dependency, by index; `undefined` for a dependency without limits. */
  readonly #state: (LimitState | undefined)[];
  /** Retry-After holds recorded, per dependency. */
  readonly holds: number[];

  constructor(
    settings: LimitSettings,
    dependencyNames: readonly string[],
    private readonly schedule: (d: number, atMs: number) => void,
  ) {
    const ramp = { slowStartMs: settings.slowStartMs, floorPerSecond: settings.floorPerSecond };
    this.holds = dependencyNames.map(() => 0);
    this.#state = dependencyNames.map((name) => {
      const effective = settings.limits[name];
      if (effective === undefined) return undefined;
      return {
        at: {
          nowMs: 0,
          effective,
          probing: false,
          probes: settings.probes,
          inFlight: 0,
          tatMs: 0,
          recoveredAtMs: undefined,
          ramp,
        },
        holdUntilMs: 0,
        line: new IntQueue(64),
        wakeAtMs: Number.POSITIVE_INFINITY,
      };
    });
  }

  /** True when calls to dependency `d` take a slot (it has limits). */
  limited(d: number): boolean {
    return this.#state[d] !== undefined;
  }

  /**
   * Slot `slot` is about to start a job that calls `d` at `t`: true when it must wait (it joined the line;
   * {@link serve} starts it later), false when it took a slot and starts now. A slot joins the back of a
   * line that is not empty without asking, so waiting slots keep their order.
   */
  lineUp(d: number, slot: number, t: number): boolean {
    const state = this.#state[d];
    if (state === undefined) return false;
    if (state.line.size === 0 && this.#take(state, d, t)) return false;
    state.line.push(slot);
    return true;
  }

  /** Dependency `d`'s wake at `t`: the slots at the head of its line start while the limits let them. */
  serve(d: number, t: number, start: (slot: number, t: number) => void): void {
    const state = this.#state[d];
    // A wake replaced by an earlier one has nothing to do: the earlier one served the line.
    if (state === undefined || state.wakeAtMs !== t) return;
    state.wakeAtMs = Number.POSITIVE_INFINITY;
    while (state.line.size > 0 && this.#take(state, d, t)) start(state.line.shift(), t);
  }

  /**
   * A call to `d` answered `outcome` at `t`: a 429 holds the dependency for min(its Retry-After,
   * `retryAfterMaxMs`, the policy's `retryAfter.maxMs`), then the call's slot goes back.
   */
  answered(
    d: number,
    t: number,
    outcome: CallOutcome,
    model: DependencyModel,
    retryAfterMaxMs: number,
  ): void {
    if (this.#state[d] === undefined) return;
    if (outcome === CallOutcome.RateLimited) this.hold(d, t, Math.min(model.retryAfterMs, retryAfterMaxMs));
    this.giveBack(d, t, outcome === CallOutcome.Success);
  }

  /**
   * A call to `d` answered at `t`: its slot goes back, saying whether it succeeded. A success after a hold
   * has ended ends the probing and starts the slow-start ramp, as the store does. A line that waited for
   * an in-flight slot is served at once.
   */
  giveBack(d: number, t: number, ok: boolean): void {
    const state = this.#state[d];
    if (state === undefined) return;
    const { at } = state;
    at.inFlight--;
    if (ok && at.probing && state.holdUntilMs <= t) {
      at.probing = false;
      at.recoveredAtMs = t;
      at.tatMs = t;
    }
    if (state.line.size > 0 && state.wakeAtMs === Number.POSITIVE_INFINITY) this.#wake(state, d, t);
  }

  /**
   * A call to `d` was answered 429 with Retry-After at `t`: every call to it waits `forMs` (min(Retry-After,
   * the policy's `retryAfter.maxMs`), computed by the caller), then probes; a longer hold in place is kept.
   */
  hold(d: number, t: number, forMs: number): void {
    const state = this.#state[d];
    if (state === undefined) return;
    const untilMs = t + forMs;
    if (state.holdUntilMs <= t || state.holdUntilMs < untilMs) {
      state.holdUntilMs = untilMs;
      state.at.probing = true;
      this.holds[d] = (this.holds[d] as number) + 1;
    }
  }

  /** Slots waiting in every line (for the run's end: they hold jobs that have not started). */
  get waiting(): number {
    let n = 0;
    for (const state of this.#state) n += state?.line.size ?? 0;
    return n;
  }

  /** One take of one unit at `t`: granted (the slot is counted in flight), or the line's wake is set. */
  #take(state: LimitState, d: number, t: number): boolean {
    const { at } = state;
    at.nowMs = t;
    at.hold = state.holdUntilMs > t ? { untilMs: state.holdUntilMs } : undefined;
    const verdict = takeVerdict(at, 1);
    if (verdict.granted) {
      at.tatMs = verdict.tatMs;
      at.inFlight++;
      return true;
    }
    // The pacer's next slot and a hold's end are waited for to the exact time they come (`t + waitMs` may
    // round below it, and the wake would find it refused again). The in-flight cap gives no time: a
    // give-back wakes the line. Operators' pauses are not modelled.
    if (verdict.refusedBy === 'rate') this.#wake(state, d, at.tatMs);
    else if (verdict.refusedBy === 'hold') this.#wake(state, d, state.holdUntilMs);
    return false;
  }

  /** Serves the line at `atMs` unless it is served sooner. */
  #wake(state: LimitState, d: number, atMs: number): void {
    if (atMs >= state.wakeAtMs) return;
    state.wakeAtMs = atMs;
    this.schedule(d, atMs);
  }
}
