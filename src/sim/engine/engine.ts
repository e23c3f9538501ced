import type { FakeClock } from '../../common/clock.js';
import { seededRandom } from '../../common/random.js';
import { BrokenCircuitError } from '../../errors/broken-circuit-error.js';
import { decide, decideSync } from '../../policy/decide.js';
import type { DecideContext, Decision, RetryPolicy } from '../../policy/types.js';
import type { AttemptState, JobRef } from '../../runtime/contracts.js';
import { admit } from '../../runtime/flow-control/admission.js';
import type { FlowBudget } from '../../runtime/flow-control/controller.js';
import { type SettleJob, settle } from '../../runtime/settle.js';
import { type DependencySpec, expectedJobs, type Scenario } from '../scenario/schema.js';
import { ArrivalStreams } from './arrivals.js';
import { Continuations } from './continuations.js';
import { CallOutcome, DependencyModel } from './dependency-model.js';
import { EventQueue } from './event-queue.js';
import { SimFlowControl } from './flow.js';
import { IntQueue } from './int-queue.js';
import { JobTable } from './job-table.js';
import type { SimAdmission, SimBreaker, SimBudget, StrategyRuntime } from './runtime.js';
import { BinnedSeries } from './series.js';
import { SlotPool } from './slot-pool.js';

/** Width of a time-series bin: one second, so a bin's count is a rate per second. */
export const BIN_MS = 1_000;
/** How often the engine flushes budgets and samples them, in virtual time (the retry budget's flush bound). */
export const TICK_MS = 250;

// An event is one int32: the low 3 bits say what happened, the rest carry a number (source, slot or job).
const ARRIVAL = 0;
const ATTEMPT_DONE = 1;
const RETRY_DUE = 2;
const TICK = 3;
/** Flow control: a hold of one dependency ends, or a release is due (the payload is the dependency's index). */
const FLOW_WAKE = 4;
/** Flow control: a slot's paced slot has come; it starts the job it holds (the payload is the slot). */
const PACED_START = 5;
const RUN_NOW = { type: 'run', waitMs: 0 } as const;
const KIND_BITS = 3;
const KIND_MASK = 7;

/** Per-dependency time series of one run, in {@link BIN_MS} bins. */
export interface DependencySeries {
  name: string;
  /** First attempts sent to the dependency. */
  first: BinnedSeries;
  /** Retries sent to the dependency (attempts after the first). */
  retries: BinnedSeries;
  successes: BinnedSeries;
  failures: BinnedSeries;
  /** Retries scheduled that charge an attempt (for a budget strategy: retries the budget granted). */
  granted: BinnedSeries;
  /** Retries postponed without charging an attempt (budget deferral, open breaker). */
  deferred: BinnedSeries;
  /**
   * Attempts refused after the job was fetched, before anything was sent: by the breaker, or by the budget
   * when a retry that holds no grant asks for one.
   */
  refused: BinnedSeries;
  /** Queue operations the strategy caused: job fetches and re-delays (a retry or a deferral moved back). */
  queueOps: BinnedSeries;
  /** Sum of the strategy's budgets' allowance and spend for the dependency, sampled once per bin. */
  allowance: BinnedSeries;
  spent: BinnedSeries;
  /** Denials the budgets counted in their window (in shadow mode: denials they would have made). */
  denied: BinnedSeries;
}

/**
 * Where the jobs still pending at the horizon were: waiting for a free worker slot (the fleet lacked
 * capacity), running, or delayed until their next attempt (retries held open).
 */
export interface PendingJobs {
  waiting: number;
  running: number;
  delayed: number;
}

/** Everything one strategy's run produced; `results.ts` turns it into the public result. */
export interface EngineOutput {
  jobs: number;
  completed: number;
  deadLettered: Map<string, BinnedSeries>;
  /** Jobs still waiting, running or delayed when the run stopped at the horizon. */
  unfinished: number;
  /** The unfinished jobs by where they were: waiting for a worker, running, or delayed until a retry. */
  pending: PendingJobs;
  /** Jobs that are neither finished nor pending: a bug if ever non-zero (computed from independent counts). */
  lost: number;
  /** Virtual time when the last job finished. */
  drainMs: number;
  /** True when the run stopped at the scenario's horizon with work still pending. */
  stoppedAtHorizon: boolean;
  dependencies: DependencySeries[];
  /** `attemptsHistogram.completed[n]`: jobs that completed after n attempts; likewise for dead letters. */
  attemptsHistogram: { completed: number[]; deadLettered: number[] };
  events: number;
  /** Under flow control, per dependency (by index), when each slow-start ramp began; empty otherwise. */
  rampStarts: number[][];
}

/** What one budget wrote for one dependency (see `written` in {@link runEngine}). */
interface BudgetUse {
  /** Virtual time of its last write. */
  at: number;
  /** Virtual time of its last retry decision (a spend or a denial). */
  retryAt: number;
  /** Successes it recorded since its store began the dependency's state. */
  successes: number;
}

/** Streams of randomness for one run, the same for every strategy so they see the same arrivals. */
export interface RunSeeds {
  behaviour: number;
  policy: number;
  arrivals: readonly number[];
}

/** Derives the run's independent random streams from the scenario seed. */
export function deriveSeeds(seed: number, arrivalSources: number): RunSeeds {
  const random = seededRandom(seed);
  const next = () => Math.floor(random() * 2 ** 31);
  const behaviour = next();
  const policy = next();
  return { behaviour, policy, arrivals: Array.from({ length: arrivalSources }, next) };
}

export interface EngineOptions {
  /** Called now and then with the jobs finished so far and the jobs the scenario is expected to create. */
  onProgress?: (finished: number, expected: number) => void;
  /** Events between progress calls. Default 32 768. */
  progressEvery?: number;
  /**
   * Stops the run when aborted (the CLI's Ctrl-C). With a signal, the engine yields to the event loop at
   * each progress call, so the abort can arrive; the run then rejects with an "interrupted" error.
   */
  signal?: AbortSignal;
}

/** A job class as the engine uses it. */
export interface EngineJobClass {
  policy: RetryPolicy;
  dependency: number;
  permanentErrorRate: number;
  idempotencyKey: boolean;
}

/**
 * Runs one strategy over a scenario on a virtual clock, from the first arrival until every job has completed
 * or been dead-lettered (or the horizon). Workers' slots take jobs from one first-in, first-out waiting list;
 * each attempt calls its class's dependency, whose model draws the outcome and latency; a failure goes
 * through stormguard's `decide` with the strategy's budget and breaker; a retry waits its delay and joins the
 * back of the waiting list, as a BullMQ delayed job does when it is promoted.
 *
 * The clock is the one the strategy's budgets were built with: the engine moves it, and flushes the budgets
 * every {@link TICK_MS} of virtual time, so no wall-clock timer is involved.
 */
export async function runEngine(
  scenario: Scenario,
  classes: readonly EngineJobClass[],
  dependencyNames: readonly string[],
  runtime: StrategyRuntime,
  clock: FakeClock,
  seeds: RunSeeds,
  options: EngineOptions = {},
): Promise<EngineOutput> {
  const { count: workerCount, concurrency } = scenario.workers;
  const slotCount = workerCount * concurrency;
  const horizon = scenario.horizon;
  const expected = Math.max(1, expectedJobs(scenario.arrivals));
  const progressEvery = options.progressEvery ?? 32_768;

  const models = dependencyNames.map(
    (n) => new DependencyModel(n, scenario.dependencies[n] as DependencySpec),
  );
  const series: DependencySeries[] = dependencyNames.map((name) => ({
    name,
    first: new BinnedSeries(BIN_MS),
    retries: new BinnedSeries(BIN_MS),
    successes: new BinnedSeries(BIN_MS),
    failures: new BinnedSeries(BIN_MS),
    granted: new BinnedSeries(BIN_MS),
    deferred: new BinnedSeries(BIN_MS),
    refused: new BinnedSeries(BIN_MS),
    queueOps: new BinnedSeries(BIN_MS),
    allowance: new BinnedSeries(BIN_MS, 'gauge'),
    spent: new BinnedSeries(BIN_MS, 'gauge'),
    denied: new BinnedSeries(BIN_MS, 'gauge'),
  }));
  const deadLettered = new Map<string, BinnedSeries>();
  const histogram = { completed: [] as number[], deadLettered: [] as number[] };

  const behaviour = seededRandom(seeds.behaviour);
  const policyRandom = seededRandom(seeds.policy);
  const arrivals = new ArrivalStreams(scenario.arrivals, Object.keys(scenario.jobClasses), seeds.arrivals);

  // Everything below grows with use, never with the fleet's size: idle workers cost nothing.
  const queue = new EventQueue(Math.max(1024, Math.min(slotCount * 2, 1 << 16)));
  const jobs = new JobTable(jobCapacity(expected));
  const waiting = new IntQueue(4096);
  // Slot s is worker s % workerCount's: the pool hands consecutive jobs to different workers.
  const idle = new SlotPool(slotCount);
  const slotJob = new Int32Array(slotCount);
  const slotOutcome = new Uint8Array(slotCount);
  /** The probe ticket of each slot's call, when its breaker admitted it as a half-open probe. */
  const slotTicket: ({ ticket?: string } | undefined)[] = [];
  const budgetOf = (slot: number): SimBudget | undefined => runtime.budgetOf(slot % workerCount);
  const budgeted = runtime.budgetCount > 0;
  /**
   * Budgets with successes recorded since the last flush: only they have anything to push. A flush of the
   * others does nothing, and a fleet of per-worker budgets would pay for one each tick.
   */
  const unflushed = new Set<SimBudget>();
  /**
   * Per dependency, what each budget wrote for it: when it last wrote, when it last decided a retry, and
   * the successes since its store began the dependency's state. A budget nothing wrote for in two windows
   * has been forgotten by its store; one that decided no retry in two windows and holds too few successes
   * to lift the allowance off its floor reads as an empty window too. Only the others (`hot`) are read
   * when sampling, so a fleet of per-worker budgets costs what its busy workers hold.
   */
  const written: Map<SimBudget, BudgetUse>[] = dependencyNames.map(() => new Map());
  const hot: Set<SimBudget>[] = dependencyNames.map(() => new Set());
  const forgetAfterMs = 2 * (runtime.budgetWindowMs ?? 0);
  const settings = runtime.unused ?? runtime.budgets[0];
  /** Fewer successes than this leave the allowance at its floor: floor(successes × ratio) <= minAllowance. */
  const liftingSuccesses = settings ? Math.floor((settings.minAllowance + 1) / settings.ratio) : 0;
  const wrote = (budget: SimBudget, d: number, retry: boolean): void => {
    const now = clock.now();
    const uses = written[d] as Map<SimBudget, BudgetUse>;
    let use = uses.get(budget);
    if (!use) {
      use = { at: now, retryAt: Number.NEGATIVE_INFINITY, successes: 0 };
      uses.set(budget, use);
    } else if (use.at + forgetAfterMs <= now) {
      // The store forgot the dependency: this write starts its state afresh.
      use.retryAt = Number.NEGATIVE_INFINITY;
      use.successes = 0;
    }
    use.at = now;
    if (retry) use.retryAt = now;
    else use.successes++;
    if (retry || use.successes >= liftingSuccesses) (hot[d] as Set<SimBudget>).add(budget);
  };

  const gated = budgeted || runtime.breaker !== undefined;
  // The ungated path reuses one context: decideSync is synchronous, so nothing else sees it meanwhile.
  const ctx: DecideContext = {
    policy: classes[0]?.policy as RetryPolicy,
    error: undefined,
    attemptsMade: 1,
    createdAtMs: 0,
    nowMs: 0,
    random: policyRandom,
    dependency: '',
    previousDelayMs: undefined,
    hasIdempotencyKey: true,
    hasDeadLetterTarget: true,
  };
  /** Breaker admissions and outcomes started by the current event, settled before the next one. */
  const admissions: Promise<unknown>[] = [];
  /**
   * Breaker answers the store gave at once: their continuations run where those of awaited calls would (a
   * `CircuitBreaker` call awaits its store once, and the engine's `.then` takes one more turn: two turns).
   */
  const continuations = new Continuations();
  const BREAKER_TURNS = 2;

  // Mutable counters live in one object: a closure variable holding a double is re-boxed on every write.
  const run = {
    completed: 0,
    finished: 0,
    delayed: 0,
    drainMs: 0,
    lastSampledBin: -1,
    events: 0,
    /** Virtual time of the last event that was not a tick. */
    lastActivity: 0,
    /** Whether a tick is scheduled; ticks stop while nothing can change a budget (see `tick`). */
    ticking: false,
  };
  /**
   * How long after the last event the budgets are still flushed and sampled. Their memory store forgets a
   * dependency two windows after its last write (a flush writes within a tick of the event), after which
   * its state no longer moves; a bin more covers the last sample. Past that the clock jumps to the next
   * event instead of stepping through idle time.
   */
  const quietMs = 2 * (runtime.budgetWindowMs ?? 0) + TICK_MS + 2 * BIN_MS;

  /** Flow control (the `flow-control` strategy): the gate a worker asks before it takes a job. */
  const flow =
    runtime.flow === undefined
      ? undefined
      : new SimFlowControl(
          new Set(classes.map((c) => c.dependency)).size > 1 ? 'park' : 'pause',
          dependencyNames,
          scenario.name,
          runtime.flow,
          clock,
          (d, atMs) => queue.push(atMs, (d << KIND_BITS) | FLOW_WAKE),
        );
  // A budget's enforced denial marks its dependency down, as a worker's flow controller does.
  if (flow)
    for (const budget of runtime.budgets)
      (budget as Partial<FlowBudget>).events?.on('denied', (denial) => {
        const d = dependencyNames.indexOf(denial.dependency);
        if (denial.mode === 'enforce' && d >= 0) flow.budgetDenied(d);
      });
  /** The one dependency of a queue whose jobs all need it (what a paused queue waits for). */
  const onlyDependency = (classes[0] as EngineJobClass).dependency;

  const enqueue = (job: number, t: number): void => {
    if (flow) {
      waiting.push(job);
      fill(t);
      return;
    }
    const slot = idle.shift();
    if (slot >= 0) start(slot, job, t);
    else waiting.push(job);
  };

  /**
   * A slot takes a job (one fetch from the queue). A run that holds no grant (a deferred job, one an open
   * breaker held back) is admitted first by stormguard's own `admit`, as a worker does before it calls
   * anything: the breaker, then the budget. Under a breaker the call must then be acquired. Each is asked
   * now (the memory stores update synchronously, in event order) and answered before the next event.
   */
  const start = (slot: number, job: number, t: number): void => {
    slotJob[slot] = job;
    const jobClass = classes[jobs.jobClass[job] as number] as EngineJobClass;
    const d = jobClass.dependency;
    (series[d] as DependencySeries).queueOps.add(t);
    if (gated && jobs.sent[job] === 1 && jobs.granted[job] === 0) {
      const context = contextFor(job, jobClass, slot, t, undefined);
      context.attemptsMade = (jobs.charged[job] as number) + 1;
      continuations.beforePromise();
      admissions.push(
        admit(context).then((refusal) => {
          if (refusal === undefined) acquire(slot, job, d, t);
          else refusedAtAdmission(slot, job, d, t, refusal);
        }),
      );
      return;
    }
    acquire(slot, job, d, t);
  };

  /** Asks the breaker (when the strategy has one) whether the job's call may go downstream now. */
  const acquire = (slot: number, job: number, d: number, t: number): void => {
    const breaker = runtime.breaker;
    if (!breaker) {
      call(slot, job, t);
      return;
    }
    const name = dependencyNames[d] as string;
    const now = breaker.acquireNow(name);
    if (now) {
      continuations.after(BREAKER_TURNS, () => {
        const refusal = admitted(slot, job, d, t, now);
        if (refusal) admissions.push(refusal);
      });
      return;
    }
    continuations.beforePromise();
    admissions.push(breaker.acquire(name).then((admission) => admitted(slot, job, d, t, admission)));
  };

  /** What the breaker's admission means for the slot's job: its call goes out, or it is refused. */
  const admitted = (
    slot: number,
    job: number,
    d: number,
    t: number,
    admission: SimAdmission,
  ): Promise<void> | undefined => {
    flow?.learn(d, admission.snapshot, t, true);
    if (admission.ticket === undefined) delete slotTicket[slot]?.ticket;
    else slotTicket[slot] = { ticket: admission.ticket };
    if (admission.allowed) {
      call(slot, job, t);
      return undefined;
    }
    return refused(slot, job, t, admission.snapshot);
  };

  /** One attempt that reaches the dependency: draw its outcome and latency, count the request. */
  const call = (slot: number, job: number, t: number): void => {
    const jobClass = classes[jobs.jobClass[job] as number] as EngineJobClass;
    const d = jobClass.dependency;
    const model = models[d] as DependencyModel;
    const outcome = model.call(t, behaviour, jobClass.permanentErrorRate);
    const s = series[d] as DependencySeries;
    if (jobs.sent[job] === 0) {
      jobs.sent[job] = 1;
      s.first.add(t);
    } else s.retries.add(t);
    jobs.granted[job] = 0;
    jobs.attempts[job] = (jobs.attempts[job] as number) + 1;
    jobs.charged[job] = (jobs.charged[job] as number) + 1;
    slotOutcome[slot] = outcome;
    queue.push(t + model.latencyMs, (slot << KIND_BITS) | ATTEMPT_DONE);
  };

  /** An attempt the breaker refused: nothing is sent; the job meets a BrokenCircuitError at once. */
  const refused = (
    slot: number,
    job: number,
    t: number,
    snapshot: { state: string; halfOpenAtMs?: number; nowMs?: number },
  ): Promise<void> => {
    const jobClass = classes[jobs.jobClass[job] as number] as EngineJobClass;
    const d = jobClass.dependency;
    (series[d] as DependencySeries).refused.add(t);
    jobs.attempts[job] = (jobs.attempts[job] as number) + 1;
    jobs.charged[job] = (jobs.charged[job] as number) + 1;
    const name = dependencyNames[d] as string;
    // As `CircuitBreaker.execute` throws it for a worker: a half-open refusal (every probe slot taken)
    // carries no half-open time, which is already past; an open one carries the wait on the breaker's clock.
    const error =
      snapshot.state === 'half-open'
        ? new BrokenCircuitError(name, undefined, 'half-open')
        : new BrokenCircuitError(
            name,
            snapshot.halfOpenAtMs,
            'open',
            snapshot.halfOpenAtMs === undefined || snapshot.nowMs === undefined
              ? undefined
              : Math.max(0, snapshot.halfOpenAtMs - snapshot.nowMs),
          );
    continuations.beforePromise();
    return decide(contextFor(job, jobClass, slot, t, error)).then((decision) => {
      apply(decision, job, d, t);
      nextJob(slot, t);
    });
  };

  /**
   * A run that held no grant was refused at admission (the breaker open, or the budget denied the retry):
   * nothing is sent, and `admit`'s decision is settled as a refusal, charging no attempt.
   */
  const refusedAtAdmission = (slot: number, job: number, d: number, t: number, decision: Decision): void => {
    (series[d] as DependencySeries).refused.add(t);
    jobs.attempts[job] = (jobs.attempts[job] as number) + 1;
    jobs.charged[job] = (jobs.charged[job] as number) + 1;
    apply(decision, job, d, t);
    nextJob(slot, t);
  };

  /**
   * Under flow control, a free slot asks the gate before it takes the job at the head of the queue. A
   * queue whose jobs all need one dependency is paused while it is held (the job fetched to find out is
   * put back, and no slot fetches until the gate wakes); in a queue that mixes dependencies, a held job is
   * parked (fetched and set aside, nothing called) and the slot takes the next one.
   */
  const flowNext = (flowControl: SimFlowControl, slot: number, t: number): boolean => {
    for (;;) {
      if (waiting.size === 0) return false;
      if (flowControl.kind === 'pause') {
        const answer = flowControl.gate(onlyDependency, t);
        if (answer.type === 'paused') return false;
        if (answer.type === 'pause') {
          // The fetch that found the queue held, and the rate limit that puts the job back.
          (series[onlyDependency] as DependencySeries).queueOps.add(t, 2);
          return false;
        }
        runPaced(slot, waiting.shift(), t, answer.type === 'run' ? answer.waitMs : 0);
        return true;
      }
      const job = waiting.shift();
      const d = (classes[jobs.jobClass[job] as number] as EngineJobClass).dependency;
      const answer = flowControl.passes(d, job) ? RUN_NOW : flowControl.gate(d, t);
      if (answer.type === 'run') {
        runPaced(slot, job, t, answer.waitMs);
        return true;
      }
      const s = series[d] as DependencySeries;
      s.queueOps.add(t, 2); // fetched, then parked (delayed far ahead, its id on the park list) or delayed
      s.refused.add(t);
      if (answer.type === 'delay') {
        run.delayed++;
        queue.push(t + answer.forMs, (job << KIND_BITS) | RETRY_DUE);
      } else flowControl.park(d, job);
    }
  };

  /** A job taken under flow control: at once, or once the paced slot it reserved comes (the worker waits for it). */
  const runPaced = (slot: number, job: number, t: number, waitMs: number): void => {
    if (waitMs <= 0) {
      start(slot, job, t);
      return;
    }
    slotJob[slot] = job;
    queue.push(t + waitMs, (slot << KIND_BITS) | PACED_START);
  };

  /** Free slots take jobs while the gate lets them (flow control only). */
  const fill = (t: number): void => {
    if (!flow) return;
    while (idle.size > 0 && waiting.size > 0) {
      const slot = idle.shift();
      if (!flowNext(flow, slot, t)) {
        idle.push(slot);
        return;
      }
    }
  };

  /** A hold of dependency `d` ended: released parked jobs are promoted back into the queue, then slots fill. */
  const wake = (d: number, t: number): void => {
    if (!flow) return;
    const released = flow.onWake(d, t);
    if (released.length > 0) (series[d] as DependencySeries).queueOps.add(t, released.length);
    for (const job of released) waiting.push(job);
    fill(t);
  };

  /** A decision's context of its own (gated decisions may be in flight together). */
  const contextFor = (
    job: number,
    jobClass: EngineJobClass,
    slot: number,
    t: number,
    error: unknown,
  ): DecideContext => {
    const previous = jobs.previousDelay[job] as number;
    const budget = budgetOf(slot);
    if (budget) wrote(budget, jobClass.dependency, true);
    return {
      policy: jobClass.policy,
      error,
      attemptsMade: jobs.charged[job] as number,
      createdAtMs: jobs.createdAt[job] as number,
      nowMs: t,
      random: policyRandom,
      dependency: dependencyNames[jobClass.dependency] as string,
      previousDelayMs: Number.isNaN(previous) ? undefined : previous,
      hasIdempotencyKey: jobClass.idempotencyKey,
      hasDeadLetterTarget: true,
      budget,
      breaker: runtime.breaker,
    };
  };

  const nextJob = (slot: number, t: number): void => {
    if (flow) {
      if (!flowNext(flow, slot, t)) idle.push(slot);
      return;
    }
    const job = waiting.shift();
    if (job >= 0) start(slot, job, t);
    else idle.push(slot);
  };

  const finish = (job: number, t: number, reason: string | undefined): void => {
    run.finished++;
    run.drainMs = t;
    const attempts = jobs.attempts[job] as number;
    const bucket = reason === undefined ? histogram.completed : histogram.deadLettered;
    bucket[attempts] = (bucket[attempts] ?? 0) + 1;
    if (reason === undefined) {
      run.completed++;
      return;
    }
    let dl = deadLettered.get(reason);
    if (!dl) {
      dl = new BinnedSeries(BIN_MS);
      deadLettered.set(reason, dl);
    }
    dl.add(t);
  };

  /** The facts `settle` reads about a job, filled in per failure (one object for the whole run). */
  const facts = new SimulatedJob(scenario, classes, dependencyNames, jobs);

  /** Settles a failed attempt through the runtime's own `settle`, as a worker does, and acts on it. */
  const apply = (decision: Decision, job: number, d: number, t: number): void => {
    const previous = jobs.previousDelay[job] as number;
    // The attempt that just failed is already counted in `charged`: the state is the one before it.
    const before: AttemptState = { attempts: (jobs.charged[job] as number) - 1, deferrals: 0 };
    if (!Number.isNaN(previous)) before.previousDelayMs = previous;
    const { state, action } = settle(before, decision, t, facts.of(job, d));
    if (action.type === 'dead-letter' || action.type === 'fail') {
      finish(job, t, action.type === 'fail' ? action.reason : action.record.reason);
      return;
    }
    jobs.charged[job] = state.attempts;
    jobs.previousDelay[job] = state.previousDelayMs ?? Number.NaN;
    // A charged retry passed the budget's step in `decide`: it runs without asking again. Anything else asks.
    jobs.granted[job] = state.granted === true ? 1 : 0;
    const s = series[d] as DependencySeries;
    s.queueOps.add(t);
    if (action.type === 'retry') s.granted.add(t);
    else s.deferred.add(t);
    run.delayed++;
    queue.push(action.dueAtMs, (job << KIND_BITS) | RETRY_DUE);
  };

  /** Records a call's outcome with the breaker; under flow control, what it answers tells the gate. */
  const record = (
    breaker: SimBreaker,
    d: number,
    t: number,
    outcome: 'success' | 'failure',
    slot: number,
  ): void => {
    const name = dependencyNames[d] as string;
    const now = breaker.recordNow(name, outcome, slotTicket[slot]);
    if (now) {
      if (flow) continuations.after(BREAKER_TURNS, () => flow.learn(d, now, t, false));
      return;
    }
    continuations.beforePromise();
    const recorded =
      outcome === 'success'
        ? breaker.recordSuccess(name, slotTicket[slot])
        : breaker.recordFailure(name, slotTicket[slot]);
    admissions.push(flow ? recorded.then((snapshot) => flow.learn(d, snapshot, t, false)) : recorded);
  };

  const attemptDone = (slot: number, t: number): Promise<void> | undefined => {
    const job = slotJob[slot] as number;
    const outcome = slotOutcome[slot] as CallOutcome;
    const jobClass = classes[jobs.jobClass[job] as number] as EngineJobClass;
    const d = jobClass.dependency;
    const s = series[d] as DependencySeries;
    const breaker = runtime.breaker;
    if (outcome === CallOutcome.Success) {
      s.successes.add(t);
      const budget = budgetOf(slot);
      if (budget) {
        budget.recordSuccess(dependencyNames[d] as string);
        unflushed.add(budget);
        wrote(budget, d, false);
      }
      if (breaker) record(breaker, d, t, 'success', slot);
      finish(job, t, undefined);
      nextJob(slot, t);
      return undefined;
    }
    s.failures.add(t);
    const error = (models[d] as DependencyModel).errors[outcome];
    // A permanent error means the dependency answered: a success for its health (CircuitBreaker's contract).
    if (breaker) record(breaker, d, t, outcome === CallOutcome.Permanent ? 'success' : 'failure', slot);
    if (!gated) {
      ctx.policy = jobClass.policy;
      ctx.error = error;
      ctx.attemptsMade = jobs.charged[job] as number;
      ctx.createdAtMs = jobs.createdAt[job] as number;
      ctx.nowMs = t;
      ctx.dependency = dependencyNames[d] as string;
      const previous = jobs.previousDelay[job] as number;
      ctx.previousDelayMs = Number.isNaN(previous) ? undefined : previous;
      ctx.hasIdempotencyKey = jobClass.idempotencyKey;
      apply(decideSync(ctx), job, d, t);
      nextJob(slot, t);
      return undefined;
    }
    continuations.beforePromise();
    return decide(contextFor(job, jobClass, slot, t, error)).then((decision) => {
      apply(decision, job, d, t);
      nextJob(slot, t);
    });
  };

  const arrive = (source: number, t: number): void => {
    const jobClass = arrivals.jobClassOf(source);
    const backlog = arrivals.backlogOf(source);
    if (backlog >= 0) {
      for (let i = 0; i < backlog; i++) enqueue(jobs.add(jobClass, t), t);
      arrivals.delivered();
      return;
    }
    enqueue(jobs.add(jobClass, t), t);
    arrivals.advance(source, t);
  };

  /**
   * Flushes the budgets and samples them once per bin, every {@link TICK_MS} while work is pending and a
   * budget can still change. Only budgets need ticks: a strategy without one has none.
   */
  const tick = (t: number): Promise<void> | undefined => {
    const bin = Math.floor(t / BIN_MS);
    const sample = bin !== run.lastSampledBin;
    if (sample) run.lastSampledBin = bin;
    const pending = flushAndSample(t, sample);
    const working =
      arrivals.active > 0 ||
      run.delayed > 0 ||
      waiting.size > 0 ||
      idle.size < slotCount ||
      (flow !== undefined && flow.parked > 0);
    if (working && t - run.lastActivity < quietMs) queue.push(t + TICK_MS, TICK);
    else run.ticking = false;
    return pending;
  };

  /**
   * The first event after a quiet spell starts the ticks again, on their grid (the first tick at or after
   * the event, as they would have been). Its bin was sampled, while nothing moved, at the bin's first tick:
   * that value is carried forward, so the bin is marked sampled.
   */
  const resumeTicks = (t: number): void => {
    run.ticking = true;
    run.lastSampledBin = Math.max(run.lastSampledBin, Math.floor(t / BIN_MS));
    queue.push(Math.ceil(t / TICK_MS) * TICK_MS, TICK);
  };

  const flushAndSample = (t: number, sample: boolean): Promise<void> | undefined => {
    if (unflushed.size === 0) {
      afterFlush(t, sample);
      return undefined;
    }
    const flushing = [...unflushed];
    unflushed.clear();
    continuations.beforePromise();
    return flushAll(flushing).then(() => afterFlush(t, sample));
  };

  /** Once the budgets hold every success: flow control's look at them, then the sample when one is due. */
  const afterFlush = (t: number, sample: boolean): void => {
    if (flow) readBudgetsForFlow(flow, t);
    if (sample) sampleBudgets(t);
  };

  /** Flow control reads the budget of a dependency its denials marked down: has it stopped denying? */
  const readBudgetsForFlow = (flowControl: SimFlowControl, t: number): void => {
    for (let d = 0; d < dependencyNames.length; d++)
      if (flowControl.awaitsBudget(d))
        for (const budget of runtime.budgets)
          flowControl.budgetRead(d, budget.counts(dependencyNames[d] as string), t);
  };

  const flushAll = async (flushing: readonly SimBudget[]): Promise<void> => {
    for (const budget of flushing) {
      const flushed = budget.flush();
      if (flushed instanceof Promise) await flushed;
    }
  };

  /**
   * Sums every budget's counts per dependency into the gauges. Budgets that are not `hot` for a dependency
   * (not built yet, idle for two windows, or holding only a few successes) read as an empty window each:
   * the floor, nothing spent, nothing denied.
   */
  const sampleBudgets = (t: number): void => {
    const floor = runtime.unused?.minAllowance ?? runtime.budgets[0]?.minAllowance ?? 0;
    for (let d = 0; d < dependencyNames.length; d++) {
      const name = dependencyNames[d] as string;
      let allowance = 0;
      let spent = 0;
      let denied = 0;
      let empty = runtime.budgetCount;
      const uses = written[d] as Map<SimBudget, BudgetUse>;
      for (const budget of hot[d] as Set<SimBudget>) {
        const use = uses.get(budget) as BudgetUse;
        const forgotten = use.at + forgetAfterMs <= t;
        if (forgotten || (use.retryAt + forgetAfterMs <= t && use.successes < liftingSuccesses)) {
          (hot[d] as Set<SimBudget>).delete(budget);
          if (forgotten) uses.delete(budget);
          continue;
        }
        empty--;
        const counts = budget.counts(name);
        allowance += counts.allowance;
        spent += counts.spent;
        denied += counts.denied;
      }
      allowance += empty * floor;
      const s = series[d] as DependencySeries;
      s.allowance.set(t, allowance);
      s.spent.set(t, spent);
      s.denied.set(t, denied);
    }
  };

  let stoppedAtHorizon = false;
  /**
   * Processes events until one has to wait for a promise (a gated decision, a budget flush), which it
   * returns; `undefined` when the run is over. Synchronous, so the loop's numbers are never boxed to
   * survive an `await`.
   */
  const step = (): Promise<void> | undefined => {
    for (;;) {
      const fromStream = arrivals.soonestAt <= queue.peekTime();
      const t = fromStream ? arrivals.soonestAt : queue.peekTime();
      if (t === Number.POSITIVE_INFINITY) return undefined;
      if (t > horizon) {
        stoppedAtHorizon = true;
        return undefined;
      }
      if (t > clock.now()) clock.set(t);
      const event = fromStream ? (arrivals.soonest << KIND_BITS) | ARRIVAL : queue.pop();
      const value = event >>> KIND_BITS;
      if ((event & KIND_MASK) !== TICK) {
        run.lastActivity = t;
        if (budgeted && !run.ticking) resumeTicks(t);
      }
      let pending: Promise<void> | undefined;
      switch (event & KIND_MASK) {
        case ARRIVAL:
          arrive(value, t);
          break;
        case ATTEMPT_DONE:
          pending = attemptDone(value, t);
          break;
        case RETRY_DUE:
          run.delayed--;
          enqueue(value, t);
          break;
        case TICK:
          pending = tick(t);
          break;
        case FLOW_WAKE:
          wake(value, t);
          break;
        case PACED_START:
          start(value, slotJob[value] as number, t);
          break;
      }
      continuations.run();
      if (++run.events % progressEvery === 0) {
        options.onProgress?.(run.finished, expected);
        if (options.signal && !pending) pending = new Promise((resolve) => setImmediate(resolve));
      }
      if (pending) return pending;
      if (admissions.length > 0 || continuations.inFlight > 0) return settleAdmissions();
    }
  };

  /** Settles breaker calls in the order they were made, including those their continuations start. */
  const settleAdmissions = async (): Promise<void> => {
    for (;;) {
      if (admissions.length > 0) await Promise.all(admissions.splice(0));
      else if (continuations.inFlight > 0) await continuations.drained();
      else break;
    }
    continuations.settled();
  };

  if (budgeted) {
    run.ticking = true;
    queue.push(0, TICK);
  }
  for (let i = 0; i < arrivals.size; i++)
    if (arrivals.backlogOf(i) >= 0) queue.push(arrivals.atOf(i), (i << KIND_BITS) | ARRIVAL);

  try {
    for (let pending = step(); pending; pending = step()) {
      await pending;
      await settleAdmissions();
      if (options.signal?.aborted) throw new Error('simulation interrupted');
    }
  } finally {
    for (const budget of runtime.budgets) await budget.close();
    await runtime.unused?.close();
  }
  options.onProgress?.(run.finished, Math.max(run.finished, expected));

  const inFlight = slotCount - idle.size;
  const parked = flow?.parked ?? 0;
  const unfinished = waiting.size + inFlight + run.delayed + parked;
  let deadLetterCount = 0;
  for (const dl of deadLettered.values()) deadLetterCount += dl.total();
  return {
    jobs: jobs.size,
    completed: run.completed,
    deadLettered,
    unfinished,
    pending: { waiting: waiting.size, running: inFlight, delayed: run.delayed + parked },
    lost: jobs.size - run.completed - deadLetterCount - unfinished,
    drainMs: run.drainMs,
    stoppedAtHorizon: stoppedAtHorizon && unfinished > 0,
    dependencies: series,
    attemptsHistogram: histogram,
    events: run.events,
    rampStarts: flow?.rampStarts ?? dependencyNames.map(() => []),
  };
}

/**
 * Rows to reserve for the run's jobs: the expected count and a margin for the Poisson draw (six standard
 * deviations), so a run of ten million jobs fills its table without doubling it past what it needs.
 */
function jobCapacity(expected: number): number {
  return Math.max(4_096, Math.ceil(expected + 6 * Math.sqrt(expected)) + 16);
}

/**
 * A simulated job as `settle` sees it. `settle` reads only `starts` on a retry; the rest (identity, name,
 * the error) only when it files a dead letter, so those are computed then and the hot path allocates nothing.
 */
class SimulatedJob implements SettleJob {
  #job = 0;
  #dependency = 0;
  readonly opts: Record<string, unknown> = {};
  readonly data: unknown = undefined;
  readonly replays = 0;

  constructor(
    private readonly scenario: Scenario,
    private readonly classes: readonly EngineJobClass[],
    private readonly dependencyNames: readonly string[],
    private readonly jobs: JobTable,
  ) {}

  of(job: number, dependency: number): this {
    this.#job = job;
    this.#dependency = dependency;
    return this;
  }

  get starts(): number {
    return this.jobs.attempts[this.#job] as number;
  }

  get ref(): JobRef {
    return {
      queue: this.scenario.name,
      jobId: String(this.#job),
      createdAt: this.jobs.createdAt[this.#job] as number,
    };
  }

  get name(): string {
    return Object.keys(this.scenario.jobClasses)[this.jobs.jobClass[this.#job] as number] ?? '';
  }

  get dependency(): string {
    return this.dependencyNames[this.#dependency] as string;
  }

  get lastError(): SettleJob['lastError'] {
    return { name: 'Error', message: `${this.dependency} failed` };
  }

  get idempotencyKey(): string | undefined {
    return (this.classes[this.jobs.jobClass[this.#job] as number] as EngineJobClass).idempotencyKey
      ? String(this.#job)
      : undefined;
  }
}
