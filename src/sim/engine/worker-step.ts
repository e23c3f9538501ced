import { BrokenCircuitError } from '../../errors/broken-circuit-error.js';
import { decide, decideSync } from '../../policy/decide.js';
import { withRetryAfterWaited } from '../../policy/retry-after-waited.js';
import type { DecideContext, Decision, RetryPolicy } from '../../policy/types.js';
import type { AttemptState } from '../../runtime/contracts.js';
import { decideContext } from '../../runtime/decide-context.js';
import { admit } from '../../runtime/flow-control/admission.js';
import { settle } from '../../runtime/settle.js';
import type { EngineJobClass, RunContext } from './context.js';
import { CallOutcome, type DependencyModel } from './dependency-model.js';
import type { DependencyStep } from './dependency-step.js';
import { event, PACED_START, RETRY_DUE } from './events.js';
import type { SimFlowControl } from './flow.js';
import { IntQueue } from './int-queue.js';
import type { DependencySeries } from './recorder.js';
import type { SimBreakerSnapshot } from './runtime.js';
import { SimulatedJob } from './simulated-job.js';
import { SlotPool } from './slot-pool.js';

const RUN_NOW = { type: 'run', waitMs: 0 } as const;

/**
 * The fleet's workers: one first-in, first-out waiting list, the slots that take jobs from it, and what a
 * worker does with a job. A slot takes a job (under flow control, after asking the gate), has it admitted
 * when it holds no grant, hands the call to the {@link DependencyStep}, and when the call answers records
 * a success or settles the failure through stormguard's own `decide` and `settle`: a retry waits its delay
 * and joins the back of the waiting list, as a BullMQ delayed job does when it is promoted.
 *
 * @example
 * const worker = new WorkerStep(run);
 * worker.calls = new DependencyStep(run, behaviour, (s, j, t, snap) => worker.refused(s, j, t, snap));
 * worker.enqueue(jobs.add(jobClass, t), t);
 */
export class WorkerStep {
  /** Set once by the engine before the run: where a slot's call goes. */
  calls!: DependencyStep;
  /** Jobs waiting for a free slot, first in, first out. */
  readonly waiting = new IntQueue(4096);
  /** Free slots. Slot s is worker s % workerCount's: the pool hands consecutive jobs to different workers. */
  readonly idle: SlotPool;
  /** Jobs delayed until a retry (or a flow-control delay) is due. */
  delayed = 0;
  /** The job each slot holds. */
  readonly #slotJob: Int32Array;
  /** The facts `settle` reads about a job, filled in per failure (one object for the whole run). */
  readonly #facts: SimulatedJob;
  /** The one dependency of a queue whose jobs all need it (what a paused queue waits for). */
  readonly #onlyDependency: number;
  readonly #refusals = new RefusalErrors();
  /** Each class's policy as `decide` uses it for a dependency with limits (see {@link policyOf}). */
  readonly #waitedPolicies = new Map<EngineJobClass, RetryPolicy>();

  constructor(private readonly run: RunContext) {
    this.idle = new SlotPool(run.slotCount);
    this.#slotJob = new Int32Array(run.slotCount);
    this.#facts = new SimulatedJob(run.scenario, run.classes, run.dependencyNames, run.jobs);
    this.#onlyDependency = (run.classes[0] as EngineJobClass).dependency;
  }

  /**
   * The class's policy as `decide` uses it: on a dependency with limits, a Retry-After past its cap is
   * waited for, as a worker waits for it (the limits hold the dependency), never dead-lettered.
   */
  #policyOf(jobClass: EngineJobClass): RetryPolicy {
    if (this.run.limits?.limited(jobClass.dependency) !== true) return jobClass.policy;
    let waited = this.#waitedPolicies.get(jobClass);
    if (waited === undefined) {
      waited = withRetryAfterWaited(jobClass.policy);
      this.#waitedPolicies.set(jobClass, waited);
    }
    return waited;
  }

  /** True while any slot holds a job. */
  get busy(): boolean {
    return this.idle.size < this.run.slotCount;
  }

  /** A new or promoted job: a free slot takes it now, or it waits. */
  enqueue(job: number, t: number): void {
    const flow = this.run.flow;
    if (flow) {
      this.waiting.push(job);
      this.#fill(flow, t);
      return;
    }
    const slot = this.idle.shift();
    if (slot >= 0) this.start(slot, job, t);
    else this.waiting.push(job);
  }

  /** A delayed job's time has come: it joins the waiting list. */
  retryDue(job: number, t: number): void {
    this.delayed--;
    this.enqueue(job, t);
  }

  /**
   * A slot takes a job (one fetch from the queue). A run that holds no grant (a deferred job, one an open
   * breaker held back) is admitted first by stormguard's own `admit`, as a worker does before it calls
   * anything: the breaker, then the budget. Under a breaker the call must then be acquired. Each is asked
   * now (the memory stores update synchronously, in event order) and answered before the next event.
   */
  start(slot: number, job: number, t: number, leased = false): void {
    const { run } = this;
    const { jobs } = run;
    this.#slotJob[slot] = job;
    const jobClass = run.classes[jobs.jobClass[job] as number] as EngineJobClass;
    const d = jobClass.dependency;
    if (!leased) {
      (run.recorder.series[d] as DependencySeries).queueOps.add(t);
      // Under limits the slot first takes a slot of the dependency, or waits in its line with the job.
      if (run.limits?.lineUp(d, slot, t) === true) return;
    }
    if (run.gated && jobs.sent[job] === 1 && jobs.granted[job] === 0) {
      // Admission asks about the run about to start: the one after the attempts charged so far.
      const context = this.#contextFor(job, jobClass, slot, t, undefined, jobs.charged[job] as number);
      run.continuations.beforePromise();
      run.admissions.push(
        admit(context).then((refusal) => {
          if (refusal === undefined) this.calls.acquire(slot, job, d, t);
          else this.#refusedAtAdmission(slot, job, d, t, refusal);
        }),
      );
      return;
    }
    this.calls.acquire(slot, job, d, t);
  }

  /** Dependency `d`'s limit lets waiting slots through: each starts the job it holds (limits only). */
  limitWake(d: number, t: number): void {
    this.run.limits?.serve(d, t, this.#startLeased);
  }

  /** Starts the job slot `slot` holds, which has its dependency's slot. */
  readonly #startLeased = (slot: number, t: number): void =>
    this.start(slot, this.#slotJob[slot] as number, t, true);

  /** Slot `slot`'s paced slot has come: it starts the job it holds. */
  startPaced(slot: number, t: number): void {
    this.start(slot, this.#slotJob[slot] as number, t);
  }

  /** Slot `slot`'s call answered: a success is recorded; a failure is decided and settled. */
  attemptDone(slot: number, t: number): Promise<void> | undefined {
    const { run, calls } = this;
    const { jobs } = run;
    const job = this.#slotJob[slot] as number;
    const outcome = calls.outcomeOf(slot);
    const jobClass = run.classes[jobs.jobClass[job] as number] as EngineJobClass;
    const d = jobClass.dependency;
    const s = run.recorder.series[d] as DependencySeries;
    const breaker = run.runtime.breaker;
    run.limits?.answered(d, t, outcome, calls.models[d] as DependencyModel, jobClass.policy.retryAfter.maxMs);
    if (outcome === CallOutcome.Success) {
      s.successes.add(t);
      const worker = slot % run.workerCount;
      const budget = run.runtime.budgetOf(worker);
      if (budget) {
        budget.recordSuccess(run.dependencyNames[d] as string);
        run.sampler.recordedSuccess(budget, worker, d);
      }
      if (breaker) calls.record(breaker, d, t, 'success', slot);
      this.#finish(job, t, undefined);
      this.#nextJob(slot, t);
      return undefined;
    }
    s.failures.add(t);
    const error = calls.errorOf(d, outcome);
    // A permanent error means the dependency answered: a success for its health (CircuitBreaker's contract).
    if (breaker) calls.record(breaker, d, t, outcome === CallOutcome.Permanent ? 'success' : 'failure', slot);
    // The attempt that just failed is already counted in `charged`: the attempts before it are one fewer.
    const attemptsBefore = (jobs.charged[job] as number) - 1;
    if (!run.gated) {
      const previous = jobs.previousDelay[job] as number;
      const context = decideContext({
        policy: this.#policyOf(jobClass),
        error,
        attemptsBefore,
        previousDelayMs: Number.isNaN(previous) ? undefined : previous,
        createdAtMs: jobs.createdAt[job] as number,
        nowMs: t,
        random: run.policyRandom,
        dependency: run.dependencyNames[d] as string,
        hasIdempotencyKey: jobClass.idempotencyKey,
        hasDeadLetterTarget: true,
      });
      this.#apply(decideSync(context), job, d, t);
      this.#nextJob(slot, t);
      return undefined;
    }
    run.continuations.beforePromise();
    return decide(this.#contextFor(job, jobClass, slot, t, error, attemptsBefore)).then((decision) => {
      this.#apply(decision, job, d, t);
      this.#nextJob(slot, t);
    });
  }

  /** An attempt the breaker refused: nothing is sent; the job meets a BrokenCircuitError at once. */
  refused(slot: number, job: number, t: number, snapshot: SimBreakerSnapshot): Promise<void> {
    const { run } = this;
    const { jobs } = run;
    const jobClass = run.classes[jobs.jobClass[job] as number] as EngineJobClass;
    const d = jobClass.dependency;
    (run.recorder.series[d] as DependencySeries).refused.add(t);
    jobs.attempts[job] = (jobs.attempts[job] as number) + 1;
    jobs.charged[job] = (jobs.charged[job] as number) + 1;
    const name = run.dependencyNames[d] as string;
    const error = this.#refusals.of(d, name, snapshot);
    run.continuations.beforePromise();
    const attemptsBefore = (jobs.charged[job] as number) - 1;
    return decide(this.#contextFor(job, jobClass, slot, t, error, attemptsBefore)).then((decision) => {
      this.#apply(decision, job, d, t);
      this.#nextJob(slot, t);
    });
  }

  /** A hold of dependency `d` ended: released parked jobs are promoted back into the queue, then slots fill. */
  wake(d: number, t: number): void {
    const flow = this.run.flow;
    if (!flow) return;
    const released = flow.onWake(d, t);
    if (released.length > 0)
      (this.run.recorder.series[d] as DependencySeries).queueOps.add(t, released.length);
    for (const job of released) this.waiting.push(job);
    this.#fill(flow, t);
  }

  /**
   * A run that held no grant was refused at admission (the breaker open, or the budget denied the retry):
   * nothing is sent, and `admit`'s decision is settled as a refusal, charging no attempt.
   */
  #refusedAtAdmission(slot: number, job: number, d: number, t: number, decision: Decision): void {
    const { jobs } = this.run;
    this.run.limits?.giveBack(d, t, false);
    (this.run.recorder.series[d] as DependencySeries).refused.add(t);
    jobs.attempts[job] = (jobs.attempts[job] as number) + 1;
    jobs.charged[job] = (jobs.charged[job] as number) + 1;
    this.#apply(decision, job, d, t);
    this.#nextJob(slot, t);
  }

  #nextJob(slot: number, t: number): void {
    const flow = this.run.flow;
    if (flow) {
      if (!this.#flowNext(flow, slot, t)) this.idle.push(slot);
      return;
    }
    const job = this.waiting.shift();
    if (job >= 0) this.start(slot, job, t);
    else this.idle.push(slot);
  }

  #finish(job: number, t: number, reason: string | undefined): void {
    this.run.recorder.finish(this.run.jobs.attempts[job] as number, t, reason);
  }

  /** Settles a failed attempt through the runtime's own `settle`, as a worker does, and acts on it. */
  #apply(decision: Decision, job: number, d: number, t: number): void {
    const { run } = this;
    const { jobs } = run;
    const previous = jobs.previousDelay[job] as number;
    // The attempt that just failed is already counted in `charged`: the state is the one before it.
    const before: AttemptState = { attempts: (jobs.charged[job] as number) - 1, deferrals: 0 };
    if (!Number.isNaN(previous)) before.previousDelayMs = previous;
    const { state, action } = settle(before, decision, t, this.#facts.of(job, d));
    if (action.type === 'dead-letter' || action.type === 'fail') {
      this.#finish(job, t, action.type === 'fail' ? action.reason : action.record.reason);
      return;
    }
    jobs.charged[job] = state.attempts;
    jobs.previousDelay[job] = state.previousDelayMs ?? Number.NaN;
    // A charged retry passed the budget's step in `decide`: it runs without asking again. Anything else asks.
    jobs.granted[job] = state.granted === true ? 1 : 0;
    const s = run.recorder.series[d] as DependencySeries;
    s.queueOps.add(t);
    if (action.type === 'retry') s.granted.add(t);
    else s.deferred.add(t);
    this.delayed++;
    run.queue.push(action.dueAtMs, event(RETRY_DUE, job));
  }

  /**
   * A gated decision's context of its own (gated decisions may be in flight together), built by the
   * runtime's `decideContext` as a worker builds it. Asking the budget counts as a write for sampling.
   */
  #contextFor(
    job: number,
    jobClass: EngineJobClass,
    slot: number,
    t: number,
    error: unknown,
    attemptsBefore: number,
  ): DecideContext {
    const { run } = this;
    const { jobs } = run;
    const previous = jobs.previousDelay[job] as number;
    const worker = slot % run.workerCount;
    const budget = run.runtime.budgetOf(worker);
    if (budget) run.sampler.wrote(budget, worker, jobClass.dependency, true);
    return decideContext({
      policy: this.#policyOf(jobClass),
      error,
      attemptsBefore,
      previousDelayMs: Number.isNaN(previous) ? undefined : previous,
      createdAtMs: jobs.createdAt[job] as number,
      nowMs: t,
      random: run.policyRandom,
      dependency: run.dependencyNames[jobClass.dependency] as string,
      hasIdempotencyKey: jobClass.idempotencyKey,
      hasDeadLetterTarget: true,
      budget,
      breaker: run.runtime.breaker,
    });
  }

  /**
   * Under flow control, a free slot asks the gate before it takes the job at the head of the queue. A
   * queue whose jobs all need one dependency is paused while it is held (the job fetched to find out is
   * put back, and no slot fetches until the gate wakes); in a queue that mixes dependencies, a held job is
   * parked (fetched and set aside, nothing called) and the slot takes the next one.
   */
  #flowNext(flow: SimFlowControl, slot: number, t: number): boolean {
    const { run, waiting } = this;
    const series = run.recorder.series;
    for (;;) {
      if (waiting.size === 0) return false;
      if (flow.kind === 'pause') {
        const answer = flow.gate(this.#onlyDependency, t);
        if (answer.type === 'paused') return false;
        if (answer.type === 'pause') {
          // The fetch that found the queue held, and the rate limit that puts the job back.
          (series[this.#onlyDependency] as DependencySeries).queueOps.add(t, 2);
          return false;
        }
        this.#runPaced(slot, waiting.shift(), t, answer.type === 'run' ? answer.waitMs : 0);
        return true;
      }
      const job = waiting.shift();
      const d = (run.classes[run.jobs.jobClass[job] as number] as EngineJobClass).dependency;
      const answer = flow.passes(d, job) ? RUN_NOW : flow.gate(d, t);
      if (answer.type === 'run') {
        this.#runPaced(slot, job, t, answer.waitMs);
        return true;
      }
      const s = series[d] as DependencySeries;
      s.queueOps.add(t, 2); // fetched, then parked (delayed far ahead, its id on the park list) or delayed
      s.refused.add(t);
      if (answer.type === 'delay') {
        this.delayed++;
        run.queue.push(t + answer.forMs, event(RETRY_DUE, job));
      } else flow.park(d, job);
    }
  }

  /** A job taken under flow control: at once, or once the paced slot it reserved comes (the worker waits for it). */
  #runPaced(slot: number, job: number, t: number, waitMs: number): void {
    if (waitMs <= 0) {
      this.start(slot, job, t);
      return;
    }
    this.#slotJob[slot] = job;
    this.run.queue.push(t + waitMs, event(PACED_START, slot));
  }

  /** Free slots take jobs while the gate lets them (flow control only). */
  #fill(flow: SimFlowControl, t: number): void {
    const { idle, waiting } = this;
    while (idle.size > 0 && waiting.size > 0) {
      const slot = idle.shift();
      if (!this.#flowNext(flow, slot, t)) {
        idle.push(slot);
        return;
      }
    }
  }
}

/**
 * The BrokenCircuitError a refused call meets, as `CircuitBreaker.execute` throws it for a worker: a
 * half-open refusal (every probe slot taken) carries no half-open time, which is already past; an open one
 * carries the wait on the breaker's clock. `decide` and `settle` only read it, so refusals of one dependency
 * with the same state and times share one (a slot meets them in runs at one virtual instant), and it is
 * built without a stack trace: capturing one per refusal was a third of budget-and-breaker's day.
 */
class RefusalErrors {
  /** The last error built per dependency. */
  readonly #last: (BrokenCircuitError | undefined)[] = [];

  of(d: number, name: string, snapshot: SimBreakerSnapshot): BrokenCircuitError {
    const halfOpen = snapshot.state === 'half-open';
    const atMs = halfOpen ? undefined : snapshot.halfOpenAtMs;
    const inMs =
      halfOpen || snapshot.halfOpenAtMs === undefined || snapshot.nowMs === undefined
        ? undefined
        : Math.max(0, snapshot.halfOpenAtMs - snapshot.nowMs);
    const last = this.#last[d];
    if (
      last !== undefined &&
      last.state === (halfOpen ? 'half-open' : 'open') &&
      last.halfOpenAtMs === atMs &&
      last.halfOpenInMs === inMs
    )
      return last;
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      const error = halfOpen
        ? new BrokenCircuitError(name, undefined, 'half-open')
        : new BrokenCircuitError(name, atMs, 'open', inMs);
      this.#last[d] = error;
      return error;
    } finally {
      Error.stackTraceLimit = limit;
    }
  }
}
