import type { FakeClock } from '../../common/clock.js';
import type { RandomSource } from '../../common/random.js';
import type { RetryPolicy } from '../../policy/types.js';
import type { Scenario } from '../scenario/schema.js';
import type { BudgetSampler } from './budget-sampler.js';
import type { Continuations } from './continuations.js';
import type { EventQueue } from './event-queue.js';
import type { SimFlowControl } from './flow.js';
import type { JobTable } from './job-table.js';
import type { SimLimits } from './limits.js';
import type { RunRecorder } from './recorder.js';
import type { StrategyRuntime } from './runtime.js';

/** A job class as the engine uses it. */
export interface EngineJobClass {
  policy: RetryPolicy;
  dependency: number;
  permanentErrorRate: number;
  idempotencyKey: boolean;
}

/**
 * What one strategy's run shares between the engine's steps: the scenario and the strategy, the virtual
 * clock, the event queue, the job table, where results are recorded, and the breaker calls in flight.
 * Built once by `runEngine`; the steps keep a reference and never replace its parts.
 */
export interface RunContext {
  readonly scenario: Scenario;
  readonly classes: readonly EngineJobClass[];
  readonly dependencyNames: readonly string[];
  readonly runtime: StrategyRuntime;
  readonly clock: FakeClock;
  readonly queue: EventQueue;
  readonly jobs: JobTable;
  readonly recorder: RunRecorder;
  readonly sampler: BudgetSampler;
  /** The policy's random stream (jitter), shared by every decision of the run in event order. */
  readonly policyRandom: RandomSource;
  /** Slots in the fleet: workers × concurrency. Slot s belongs to worker s % workers. */
  readonly slotCount: number;
  readonly workerCount: number;
  /** Flow control (the `flow-control` strategy): the gate a worker asks before it takes a job. */
  readonly flow: SimFlowControl | undefined;
  /** Fleet-wide limits (the `budget-and-limits` strategy): the slot a job takes before it starts. */
  readonly limits: SimLimits | undefined;
  /** True when failures go through a budget or a breaker: `decide` is then awaited. */
  readonly gated: boolean;
  /** Breaker admissions and outcomes started by the current event, settled before the next one. */
  readonly admissions: Promise<unknown>[];
  /**
   * Breaker answers the store gave at once: their continuations run where those of awaited calls would (a
   * `CircuitBreaker` call awaits its store once, and the engine's `.then` takes one more turn: two turns).
   */
  readonly continuations: Continuations;
}

/** Promise turns a breaker answer takes to reach the engine (see {@link RunContext.continuations}). */
export const BREAKER_TURNS = 2;
