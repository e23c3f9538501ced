import type { RandomSource } from '../../common/random.js';
import type { DependencySpec } from '../scenario/schema.js';
import { BREAKER_TURNS, type EngineJobClass, type RunContext } from './context.js';
import { CallOutcome, DependencyModel } from './dependency-model.js';
import { ATTEMPT_DONE, event } from './events.js';
import type { DependencySeries } from './recorder.js';
import type { SimAdmission, SimBreaker, SimBreakerSnapshot } from './runtime.js';

/**
 * What the engine does when the breaker refuses a slot's call: the job meets a `BrokenCircuitError` at
 * once. Returns the decision's promise.
 */
export type OnRefused = (slot: number, job: number, t: number, snapshot: SimBreakerSnapshot) => Promise<void>;

/**
 * The dependency side of an attempt: the breaker's admission of the call (when the strategy has a
 * breaker), the call itself (its outcome and latency drawn from the dependency's model, the request
 * counted, the answer scheduled), and the outcome reported back to the breaker.
 *
 * Breaker answers an in-process store gives at once run as continuations on the turn an awaited answer
 * would reach (`Continuations`), so the order of events is the same as with awaited calls.
 *
 * @example
 * const calls = new DependencyStep(run, behaviour, (slot, job, t, snapshot) => worker.refused(slot, job, t, snapshot));
 * calls.acquire(slot, job, d, t); // later an ATTEMPT_DONE event for `slot`
 */
export class DependencyStep {
  /** Each dependency's model, by index. */
  readonly models: readonly DependencyModel[];
  /** The outcome of each slot's call in flight (a `CallOutcome`). */
  readonly #slotOutcome: Uint8Array;
  /** The probe ticket of each slot's call, when its breaker admitted it as a half-open probe. */
  readonly #slotTicket: ({ ticket?: string } | undefined)[] = [];

  constructor(
    private readonly run: RunContext,
    private readonly behaviour: RandomSource,
    private readonly onRefused: OnRefused,
  ) {
    this.models = run.dependencyNames.map(
      (n) => new DependencyModel(n, run.scenario.dependencies[n] as DependencySpec),
    );
    this.#slotOutcome = new Uint8Array(run.slotCount);
  }

  /** The outcome of the call slot `slot` made. */
  outcomeOf(slot: number): CallOutcome {
    return this.#slotOutcome[slot] as CallOutcome;
  }

  /** The error a failed call to `d` raised (built once per dependency and outcome). */
  errorOf(d: number, outcome: CallOutcome): Error {
    return (this.models[d] as DependencyModel).errors[outcome] as Error;
  }

  /** Asks the breaker (when the strategy has one) whether the job's call may go downstream now. */
  acquire(slot: number, job: number, d: number, t: number): void {
    const { run } = this;
    const breaker = run.runtime.breaker;
    if (!breaker) {
      this.#call(slot, job, t);
      return;
    }
    const name = run.dependencyNames[d] as string;
    const now = breaker.acquireNow(name);
    if (now) {
      run.continuations.after(BREAKER_TURNS, () => {
        const refusal = this.#admitted(slot, job, d, t, now);
        if (refusal) run.admissions.push(refusal);
      });
      return;
    }
    run.continuations.beforePromise();
    run.admissions.push(
      breaker.acquire(name).then((admission) => this.#admitted(slot, job, d, t, admission)),
    );
  }

  /**
   * Records a call's outcome with the breaker (a permanent error counts as a success: the dependency
   * answered); under flow control, what the breaker answers tells the gate.
   */
  record(breaker: SimBreaker, d: number, t: number, outcome: 'success' | 'failure', slot: number): void {
    const { run } = this;
    const flow = run.flow;
    const name = run.dependencyNames[d] as string;
    const now = breaker.recordNow(name, outcome, this.#slotTicket[slot]);
    if (now) {
      if (flow) run.continuations.after(BREAKER_TURNS, () => flow.learn(d, now, t, false));
      return;
    }
    run.continuations.beforePromise();
    const recorded =
      outcome === 'success'
        ? breaker.recordSuccess(name, this.#slotTicket[slot])
        : breaker.recordFailure(name, this.#slotTicket[slot]);
    run.admissions.push(flow ? recorded.then((snapshot) => flow.learn(d, snapshot, t, false)) : recorded);
  }

  /** What the breaker's admission means for the slot's job: its call goes out, or it is refused. */
  #admitted(
    slot: number,
    job: number,
    d: number,
    t: number,
    admission: SimAdmission,
  ): Promise<void> | undefined {
    this.run.flow?.learn(d, admission.snapshot, t, true);
    if (admission.ticket === undefined) delete this.#slotTicket[slot]?.ticket;
    else this.#slotTicket[slot] = { ticket: admission.ticket };
    if (admission.allowed) {
      this.#call(slot, job, t);
      return undefined;
    }
    return this.onRefused(slot, job, t, admission.snapshot);
  }

  /** One attempt that reaches the dependency: draw its outcome and latency, count the request. */
  #call(slot: number, job: number, t: number): void {
    const { jobs, classes } = this.run;
    const jobClass = classes[jobs.jobClass[job] as number] as EngineJobClass;
    const d = jobClass.dependency;
    const model = this.models[d] as DependencyModel;
    const outcome = model.call(t, this.behaviour, jobClass.permanentErrorRate);
    const s = this.run.recorder.series[d] as DependencySeries;
    if (jobs.sent[job] === 0) {
      jobs.sent[job] = 1;
      s.first.add(t);
    } else s.retries.add(t);
    if (outcome === CallOutcome.RateLimited) s.rateLimited.add(t);
    jobs.granted[job] = 0;
    jobs.attempts[job] = (jobs.attempts[job] as number) + 1;
    jobs.charged[job] = (jobs.charged[job] as number) + 1;
    this.#slotOutcome[slot] = outcome;
    this.run.queue.push(t + model.latencyMs, event(ATTEMPT_DONE, slot));
  }
}
