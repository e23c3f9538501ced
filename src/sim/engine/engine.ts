import type { FakeClock } from '../../common/clock.js';
import { seededRandom } from '../../common/random.js';
import type { FlowBudget } from '../../runtime/flow-control/controller.js';
import { expectedJobs, type Scenario } from '../scenario/schema.js';
import { ArrivalStreams } from './arrivals.js';
import { BudgetSampler } from './budget-sampler.js';
import type { EngineJobClass, RunContext } from './context.js';
import { Continuations } from './continuations.js';
import { DependencyStep } from './dependency-step.js';
import { EventQueue } from './event-queue.js';
import {
  ARRIVAL,
  ATTEMPT_DONE,
  event,
  FLOW_WAKE,
  KIND_BITS,
  KIND_MASK,
  LIMIT_WAKE,
  PACED_START,
  RETRY_DUE,
  TICK,
} from './events.js';
import { SimFlowControl } from './flow.js';
import { JobTable } from './job-table.js';
import { SimLimits } from './limits.js';
import { BIN_MS, type EngineOutput, RunRecorder } from './recorder.js';
import type { StrategyRuntime } from './runtime.js';
import type { RunSeeds } from './seeds.js';
import { BudgetTicks, TICK_MS } from './ticks.js';
import { WorkerStep } from './worker-step.js';

/** Options of {@link runEngine}. */
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

/**
 * Runs one strategy over a scenario on a virtual clock, from the first arrival until every job has completed
 * or been dead-lettered (or the horizon). Workers' slots take jobs from one first-in, first-out waiting list
 * ({@link WorkerStep}); each attempt calls its class's dependency, whose model draws the outcome and latency
 * ({@link DependencyStep}); a failure goes through stormguard's `decide` with the strategy's budget and
 * breaker; a retry waits its delay and joins the back of the waiting list, as a BullMQ delayed job does when
 * it is promoted. What happened is recorded by the {@link RunRecorder}.
 *
 * The clock is the one the strategy's budgets were built with: the engine moves it, and flushes the budgets
 * every {@link TICK_MS} of virtual time ({@link BudgetTicks}), so no wall-clock timer is involved.
 *
 * @example
 * const output = await runEngine(scenario, classes, names, runtime, clock, deriveSeeds(seed, scenario.arrivals.length));
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
  const budgeted = runtime.budgetCount > 0;

  const arrivals = new ArrivalStreams(scenario.arrivals, Object.keys(scenario.jobClasses), seeds.arrivals);
  // Everything below grows with use, never with the fleet's size: idle workers cost nothing.
  const queue = new EventQueue(Math.max(1024, Math.min(slotCount * 2, 1 << 16)));
  const recorder = new RunRecorder(dependencyNames, expectedBins(scenario, classes), budgeted);
  const continuations = new Continuations();
  const flow =
    runtime.flow === undefined
      ? undefined
      : new SimFlowControl(
          new Set(classes.map((c) => c.dependency)).size > 1 ? 'park' : 'pause',
          dependencyNames,
          scenario.name,
          runtime.flow,
          clock,
          (d, atMs) => queue.push(atMs, event(FLOW_WAKE, d)),
        );
  // A budget's enforced denial marks its dependency down, as a worker's flow controller does.
  if (flow)
    for (const budget of runtime.budgets)
      (budget as Partial<FlowBudget>).events?.on('denied', (denial) => {
        const d = dependencyNames.indexOf(denial.dependency);
        if (denial.mode === 'enforce' && d >= 0) flow.budgetDenied(d);
      });

  const limits =
    runtime.limits === undefined
      ? undefined
      : new SimLimits(runtime.limits, dependencyNames, (d, atMs) => queue.push(atMs, event(LIMIT_WAKE, d)));

  const run: RunContext = {
    scenario,
    classes,
    dependencyNames,
    runtime,
    clock,
    queue,
    jobs: new JobTable(jobCapacity(expected)),
    recorder,
    sampler: new BudgetSampler(runtime, dependencyNames, recorder.series, clock, continuations, flow),
    policyRandom: seededRandom(seeds.policy),
    slotCount,
    workerCount,
    flow,
    limits,
    gated: budgeted || runtime.breaker !== undefined,
    admissions: [],
    continuations,
  };
  const worker = new WorkerStep(run);
  worker.calls = new DependencyStep(run, seededRandom(seeds.behaviour), (slot, job, t, snapshot) =>
    worker.refused(slot, job, t, snapshot),
  );

  /**
   * How long after the last event the budgets are still flushed and sampled. Their memory store forgets a
   * dependency two windows after its last write (a flush writes within a tick of the event), after which
   * its state no longer moves; a bin more covers the last sample.
   */
  const quietMs = 2 * (runtime.budgetWindowMs ?? 0) + TICK_MS + 2 * BIN_MS;
  const ticks = new BudgetTicks(
    queue,
    run.sampler,
    quietMs,
    () =>
      arrivals.active > 0 ||
      worker.delayed > 0 ||
      worker.waiting.size > 0 ||
      worker.busy ||
      (flow !== undefined && flow.parked > 0),
  );

  const arrive = (source: number, t: number): void => {
    const jobClass = arrivals.jobClassOf(source);
    const backlog = arrivals.backlogOf(source);
    if (backlog >= 0) {
      for (let i = 0; i < backlog; i++) worker.enqueue(run.jobs.add(jobClass, t), t);
      arrivals.delivered();
      return;
    }
    worker.enqueue(run.jobs.add(jobClass, t), t);
    arrivals.advance(source, t);
  };

  // Mutable counters live in one object: a closure variable holding a double is re-boxed on every write.
  const counts = { events: 0, stoppedAtHorizon: false };
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
        counts.stoppedAtHorizon = true;
        return undefined;
      }
      if (t > clock.now()) clock.set(t);
      const next = fromStream ? event(ARRIVAL, arrivals.soonest) : queue.pop();
      const value = next >>> KIND_BITS;
      const kind = next & KIND_MASK;
      if (kind !== TICK && budgeted) ticks.activity(t);
      let pending: Promise<void> | undefined;
      switch (kind) {
        case ARRIVAL:
          arrive(value, t);
          break;
        case ATTEMPT_DONE:
          pending = worker.attemptDone(value, t);
          break;
        case RETRY_DUE:
          worker.retryDue(value, t);
          break;
        case TICK:
          pending = ticks.tick(t);
          break;
        case FLOW_WAKE:
          worker.wake(value, t);
          break;
        case PACED_START:
          worker.startPaced(value, t);
          break;
        case LIMIT_WAKE:
          worker.limitWake(value, t);
          break;
      }
      continuations.run();
      if (++counts.events % progressEvery === 0) {
        options.onProgress?.(recorder.finished, expected);
        if (options.signal && !pending) pending = new Promise((resolve) => setImmediate(resolve));
      }
      if (pending) return pending;
      if (run.admissions.length > 0 || continuations.inFlight > 0) return settleAdmissions();
    }
  };

  /** Settles breaker calls in the order they were made, including those their continuations start. */
  const settleAdmissions = async (): Promise<void> => {
    for (;;) {
      if (run.admissions.length > 0) await Promise.all(run.admissions.splice(0));
      else if (continuations.inFlight > 0) await continuations.drained();
      else break;
    }
    continuations.settled();
  };

  if (budgeted) ticks.start();
  for (let i = 0; i < arrivals.size; i++)
    if (arrivals.backlogOf(i) >= 0) queue.push(arrivals.atOf(i), event(ARRIVAL, i));

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
  options.onProgress?.(recorder.finished, Math.max(recorder.finished, expected));

  const running = slotCount - worker.idle.size;
  return recorder.output({
    jobs: run.jobs.size,
    pending: { waiting: worker.waiting.size, running, delayed: worker.delayed + (flow?.parked ?? 0) },
    events: counts.events,
    stoppedAtHorizon: counts.stoppedAtHorizon,
    rampStarts: flow?.rampStarts ?? dependencyNames.map(() => []),
  });
}

/**
 * The time-series bins a run is expected to reach: its last arrival plus the time its jobs may still run
 * (an hour, or the longest `maxAgeMs`), never past the horizon. A run that goes on longer grows its series.
 */
function expectedBins(scenario: Scenario, classes: readonly EngineJobClass[]): number {
  let lastArrivalMs = 0;
  for (const a of scenario.arrivals)
    lastArrivalMs = Math.max(lastArrivalMs, a.backlog !== undefined ? a.at : (a.until ?? a.from));
  let drainMs = DRAIN_MS;
  for (const c of classes) drainMs = Math.max(drainMs, c.policy.maxAgeMs ?? 0);
  return Math.max(256, Math.ceil(Math.min(scenario.horizon, lastArrivalMs + drainMs) / BIN_MS) + 1);
}

/** How long a run is expected to go on after its last arrival, at least. */
const DRAIN_MS = 3_600_000;

/**
 * Rows to reserve for the run's jobs: the expected count and a margin for the Poisson draw (six standard
 * deviations), so a run of ten million jobs fills its table without doubling it past what it needs.
 */
function jobCapacity(expected: number): number {
  return Math.max(4_096, Math.ceil(expected + 6 * Math.sqrt(expected)) + 16);
}
