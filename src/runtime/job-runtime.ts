import type { CircuitBreaker } from '../breaker/circuit-breaker.js';

import type { Clock } from '../common/clock.js';
import { describeError } from '../common/error-text.js';
import { jobDependencyName } from '../common/names.js';
import type { RandomSource } from '../common/random.js';
import { isBrokenCircuitError } from '../errors/broken-circuit-error.js';
import { isPermanentError, PermanentError } from '../errors/permanent-error.js';
import { classify } from '../policy/classify/classify.js';
import { decide } from '../policy/decide.js';
import { withRetryAfterWaited } from '../policy/retry-after-waited.js';
import type {
  BreakerGate,
  BreakerVerdict,
  BudgetGate,
  BudgetVerdict,
  Classification,
  DeadLetterReason,
  Decision,
  RetryPolicy,
} from '../policy/types.js';
import { appendAttempt, attemptEntry } from './attempt-history.js';
import { type CallContext, type CallLimits, JobCallContext } from './call-context.js';
import type { AttemptState, AttemptStateStore, DeadLetterRecord, DeadLetterStore } from './contracts.js';
import { decideContext } from './decide-context.js';
import type { JobLabels } from './events.js';
import { admit, needsAdmission } from './flow-control/admission.js';
import { budgetUnderFlow } from './flow-control/budget-hold.js';
import type { FlowAction, FlowController } from './flow-control/controller.js';
import {
  type AttemptOutcome,
  type AttemptTrace,
  type JobInstrumentation,
  keepTraceLinks,
} from './instrumentation.js';
import { type JobHandle, mayHaveAttemptState } from './job-handle.js';
import type { LimitAnswer, LimitController } from './limits/controller.js';
import { limitHeldOf } from './limits/limit-held-error.js';
import { type ErrorText, OutcomeWriter } from './outcome-writer.js';
import {
  assertBookkeepingBackoff,
  type BookkeepingBackoff,
  bookkeepingDelayMs,
  DEFAULT_BOOKKEEPING_BACKOFF,
  isPermanentRefusal,
  MAX_BOOKKEEPING_RERUNS,
  type PendingWrite,
  refusalText,
} from './pending-outcome.js';
import { type DeadLetterRedaction, keptStackRedacted, redactErrorText } from './redaction.js';
import type { JobEventSink, RunOutcome } from './run-outcome.js';
import { type SettleJob, settle } from './settle.js';

/**
 * The retry budget as the runtime uses it: `trySpend` (through `decide`) on the failure path, and
 * `recordSuccess` on the success path, which must be synchronous and batched (no round trip per job).
 * `flush` sends the batched successes. `RetryBudget` is one.
 *
 * @example
 * const budget: RuntimeBudget = new RetryBudget({ store: new RedisBudgetStore({ redis }) });
 */
export interface RuntimeBudget extends BudgetGate {
  recordSuccess(dependency: string): void;
  flush(): Promise<unknown>;
}

/**
 * The circuit breaker as the runtime uses it: `check` in `decide`, `execute` around each `ctx.call`, and
 * `flush` (when it has one) at shutdown. `CircuitBreaker` is one.
 *
 * @example
 * const breaker: RuntimeBreaker = new CircuitBreaker({ consecutiveFailures: 5 });
 */
export type RuntimeBreaker = Pick<CircuitBreaker, 'check' | 'execute'> &
  Partial<Pick<CircuitBreaker, 'flush'>>;

/**
 * An idempotency guard as the runtime uses it: `IdempotencyGuard` is one.
 *
 * @example
 * const guard: RuntimeGuard = redisIdempotencyGuard({ redis, ttlMs: 86_400_000 });
 */
export interface RuntimeGuard {
  once<T>(key: string, fn: () => T | Promise<T>): Promise<T>;
}

/**
 * Flow control as the runtime uses it: the gate before each run, holding a job whose call the breaker
 * refused, and parking. `FlowController` is one.
 *
 * @example
 * const flow: RuntimeFlow = new FlowController({ store }, { queue: 'index', breaker, clock, emit, internalError });
 */
export type RuntimeFlow = Pick<
  FlowController,
  'beforeRun' | 'heldByBreaker' | 'park' | 'holdsBudgetDenials'
> & {
  readonly options: { readonly parkHorizonMs: number };
};

/**
 * Limits as the runtime uses them: a slot around each `ctx.call` and before a job whose dependency is
 * known up front, holding a job a limit held, and whether a dependency is limited (its Retry-After answers
 * then hold the dependency, and `retryAfter.onExceeded` no longer applies to it). `LimitController` is one.
 *
 * @example
 * const limits: RuntimeLimits = new LimitController({ openai: { maxInFlight: 25 } }, { store }, settings);
 */
export type RuntimeLimits = CallLimits &
  Pick<LimitController, 'isLimited' | 'holdAction'> & {
    /** The dependency every job of the queue needs (its slot is taken before each job starts). */
    readonly queueDependency?: string | undefined;
  };

/**
 * What a {@link JobRuntime} needs; a queue adapter builds it from its user's options.
 *
 * @example
 * const settings: JobRuntimeSettings = { queue: 'index', policy, dependencies: {}, attempts: store,
 *   deadLetters: store, clock: systemClock, random: systemRandom, events, internalError: console.error, maxStalls: 1 };
 */
export interface JobRuntimeSettings {
  queue: string;
  policy: RetryPolicy;
  budget?: RuntimeBudget | undefined;
  breaker?: RuntimeBreaker | undefined;
  /** Job name → dependency; a name with no entry is its own dependency. */
  dependencies: Readonly<Record<string, string>>;
  /** Where attempt states live between attempts (a dead-letter store is one). */
  attempts: AttemptStateStore;
  /**
   * Where dead letters are filed; `undefined` makes every terminal decision a `fail`. Its `redaction` hook
   * (when it has one) also redacts every error stormguard hands the queue, its logs and its events.
   */
  deadLetters:
    | (Pick<DeadLetterStore, 'file'> & { readonly redaction?: DeadLetterRedaction | undefined })
    | undefined;
  guard?: RuntimeGuard | undefined;
  /** The one clock: decisions, dead-letter times and the due time of every retry. */
  clock: Clock;
  random: RandomSource;
  events: JobEventSink;
  /** Reports a failure of the runtime's own bookkeeping (a store that refused a write). */
  internalError: (error: unknown) => void;
  /** Stalls a job may have before it is dead-lettered unprocessed (BullMQ's `maxStalledCount` meaning). */
  maxStalls: number;
  /** Errors the processor throws on purpose to steer its queue (BullMQ's `DelayedError`…): handed back as they are. */
  isPassThrough?: (error: unknown) => boolean;
  /** How long an attempt state outlives the moment it is needed. Default 7 days. */
  attemptStateTtlMs?: number;
  /** Follows each attempt for a tracer (`stormguard/opentelemetry`); none by default. */
  instrumentation?: JobInstrumentation | undefined;
  /** Flow control: hold jobs whose dependency is down, pace its recovery. Default none. */
  flow?: RuntimeFlow | undefined;
  /** Fleet-wide limits per dependency: slots around calls, held jobs, Retry-After holds. Default none. */
  limits?: RuntimeLimits | undefined;
  /**
   * How a write a store refused is retried (the outcome kept in the job's own record meanwhile). Default
   * 5 s doubling to 5 minutes, until the job's max age.
   */
  bookkeepingBackoff?: BookkeepingBackoff | undefined;
}

const DEFAULT_ATTEMPT_STATE_TTL_MS = 7 * 24 * 3_600_000;
const FRESH: Readonly<AttemptState> = Object.freeze({ attempts: 0, deferrals: 0 });

/**
 * Runs jobs under stormguard's control, knowing no queue library: the processor with a call context,
 * success accounting, and on a failed attempt `decide`, {@link settle} and the one action it names. A queue
 * adapter gives it a {@link JobHandle} per job and turns the {@link RunOutcome} into its queue's terms.
 *
 * Attempt state is read only for a job its queue started before (a job that never failed costs no read),
 * written before a retry is scheduled (a crash in between over-counts an attempt, never under-counts one),
 * and cleared when a job that had one completes. A job whose state says it was dead-lettered is never
 * run again: its worker filed the record and crashed before ending it.
 *
 * @example
 * const runtime = new JobRuntime({ queue: 'index', policy, dependencies: {}, attempts: store, deadLetters: store,
 *   clock: systemClock, random: systemRandom, events, internalError: console.error, maxStalls: 1 });
 * const outcome = await runtime.run(handle, (ctx) => processor(job, ctx));
 */
export class JobRuntime {
  readonly #isFailure: (error: unknown) => boolean;
  readonly #recordSuccess: (dependency: string) => void;
  readonly #ttlMs: number;
  /** Traced attempts whose bookkeeping a store refused: their trace ends saying so. */
  readonly #refusedBookkeeping = new WeakMap<AttemptTrace, { error: unknown }>();
  /** Writes decided outcomes, keeping in the job's own record those a store refused. */
  readonly #writer: OutcomeWriter;
  readonly #backoff: BookkeepingBackoff;
  /** An error's text as it may leave stormguard (the queue, logs, events): redacted when configured. */
  readonly #errorText: ((error: ErrorText, record: DeadLetterRecord | undefined) => ErrorText) | undefined;
  /** `internalError`, with the error redacted when redaction is configured. */
  readonly #report: (error: unknown) => void;
  /** The policy `decide` uses for a limited dependency: a Retry-After is waited for, whatever `onExceeded` says. */
  readonly #limitedPolicy: RetryPolicy;

  constructor(private readonly settings: JobRuntimeSettings) {
    const { policy, clock, budget } = settings;
    // What counts against a dependency's breaker: a failure the policy would retry (a timeout, a 503).
    // A permanent error means the dependency answered; for its health that is a success.
    this.#isFailure = (error) => classify(error, policy, clock.now()).retryable;
    // The work is done when this runs: a budget that throws is reported, never turned into a failed job.
    this.#recordSuccess = budget
      ? (dependency) => {
          try {
            budget.recordSuccess(dependency);
          } catch (error) {
            settings.internalError(error);
          }
        }
      : () => {};
    this.#ttlMs = Math.max(settings.attemptStateTtlMs ?? DEFAULT_ATTEMPT_STATE_TTL_MS, policy.maxAgeMs ?? 0);
    if (settings.bookkeepingBackoff) assertBookkeepingBackoff(settings.bookkeepingBackoff);
    this.#backoff = settings.bookkeepingBackoff ?? DEFAULT_BOOKKEEPING_BACKOFF;
    this.#errorText = errorRedactor(settings);
    this.#limitedPolicy = withRetryAfterWaited(policy);
    const redactText = this.#errorText;
    this.#report = redactText
      ? (error) => settings.internalError(redactedError(redactText(describeError(error), undefined)))
      : settings.internalError;
    this.#writer = new OutcomeWriter({
      queue: settings.queue,
      maxAgeMs: policy.maxAgeMs,
      attempts: settings.attempts,
      deadLetters: settings.deadLetters,
      clock,
      events: settings.events,
      report: this.#report,
      errorText: (error, record) => (redactText ? redactText(error, record) : error),
      backoff: this.#backoff,
    });
  }

  /**
   * The job's dependency: `dependencies[name]`, or the job name when it has no mapping. A job name that
   * cannot be a dependency name (empty, over 200 characters, U+0000…; queues allow them) is mapped
   * losslessly before `decide` (a readable part and a hash suffix, see `jobDependencyName`), so the budget,
   * the breaker and flow control all accept it and two names never share a dependency.
   */
  dependencyFor(name: string): string {
    const mapped = this.settings.dependencies[name];
    if (mapped !== undefined) return mapped;
    return jobDependencyName(name);
  }

  /**
   * Runs one job: `work` is the user's processor bound to the queue's own job object, and `keyOf` (when
   * the worker has an idempotency guard) its idempotency key.
   */
  async run<Result>(
    job: JobHandle,
    work: (ctx: CallContext) => Promise<Result>,
    keyOf?: () => string | undefined,
  ): Promise<RunOutcome<Result>> {
    // The processor ran before and its outcome is still to be written: write it, and run nothing.
    const pending = job.keepNote ? job.note?.pending : undefined;
    if (pending) return this.#writer.completePending(job, pending);
    let stored: AttemptState | undefined;
    try {
      stored = mayHaveAttemptState(job) ? await this.settings.attempts.readAttempts(job.ref) : undefined;
    } catch (error) {
      // A store that can never read this job's state (an id it cannot hold) has none: the job runs as new,
      // and its outcome then takes the path of a write no retry fixes.
      if (!isPermanentRefusal(error)) return this.#retryBookkeeping(job, error);
      this.#report(error);
      stored = undefined;
    }
    if (stored?.deadLettered) {
      const { reason, detail, recordId } = stored.deadLettered;
      return { type: 'dead-lettered', recordId, reason, message: `dead-lettered (${reason}): ${detail}` };
    }
    const state = stored ?? FRESH;
    const { settings } = this;
    const dependency = this.dependencyFor(job.name);
    const attempt = state.attempts + 1;
    const { instrumentation } = settings;
    const trace =
      instrumentation && this.#active(instrumentation)
        ? this.#startTrace(instrumentation, job, dependency, attempt, state)
        : undefined;
    if (!trace) return this.#attempt(job, work, keyOf, stored, state, dependency, attempt, undefined);
    let outcome: RunOutcome<Result> | undefined;
    try {
      outcome = await this.#attempt(job, work, keyOf, stored, state, dependency, attempt, trace);
      return outcome;
    } finally {
      this.#endTrace(trace, outcome);
    }
  }

  /** One attempt of a job whose attempt state is read and not dead-lettered. */
  async #attempt<Result>(
    job: JobHandle,
    work: (ctx: CallContext) => Promise<Result>,
    keyOf: (() => string | undefined) | undefined,
    stored: AttemptState | undefined,
    state: AttemptState,
    dependency: string,
    attempt: number,
    trace: AttemptTrace | undefined,
  ): Promise<RunOutcome<Result>> {
    const { settings } = this;
    const { key, error: keyError } = keyOfJob(keyOf);
    const { events } = settings;
    const labels = (dep: string): JobLabels => ({ queue: settings.queue, task: job.name, dependency: dep });
    const onSuccess = events.has('success')
      ? (dep: string) => {
          this.#recordSuccess(dep);
          events.emit('success', labels(dep));
        }
      : this.#recordSuccess;
    const ctx = new JobCallContext(
      dependency,
      attempt,
      key,
      onSuccess,
      settings.breaker,
      this.#isFailure,
      trace,
      settings.limits,
    );
    if (job.stalls > settings.maxStalls) {
      const { error, decision } = stalledOut(
        job.stalls,
        settings.maxStalls,
        settings.deadLetters !== undefined,
      );
      return this.#settle(job, error, ctx, state, stored !== undefined, decision, trace);
    }

    const flow = settings.flow;
    if (flow) {
      const held = await this.#gate<Result>(flow, job, dependency);
      if (held) return held;
    }

    const limits = settings.limits;
    if (limits) {
      const held = await this.#limitGate<Result>(limits, job, ctx, dependency);
      if (held) return held;
    }
    try {
      return await this.#run(job, work, ctx, { key, keyError, stored, state, dependency, attempt, trace });
    } finally {
      // Every path has given its slots back by now; this is the backstop.
      ctx.releaseReserved(false);
    }
  }

  /** Admission, then the processor and what its outcome comes to. */
  async #run<Result>(
    job: JobHandle,
    work: (ctx: CallContext) => Promise<Result>,
    ctx: JobCallContext,
    run: {
      key: string | undefined;
      keyError: PermanentError | undefined;
      stored: AttemptState | undefined;
      state: AttemptState;
      dependency: string;
      attempt: number;
      trace: AttemptTrace | undefined;
    },
  ): Promise<RunOutcome<Result>> {
    const { key, keyError, stored, state, dependency, attempt, trace } = run;
    const { settings } = this;
    const { events, flow, limits } = settings;
    const labels = (dep: string): JobLabels => ({ queue: settings.queue, task: job.name, dependency: dep });
    const onSuccess = ctx.onSuccess;
    if ((settings.budget || settings.breaker) && needsAdmission(stored, job.stalls)) {
      const refused = await this.#admit(job, state, dependency, trace);
      if (refused === 'bookkeeping') return { type: 'delayed' };
      if (refused !== undefined) {
        ctx.releaseReserved(false);
        if (events.has('refused')) events.emit('refused', { ...labels(dependency), by: refused.by });
        return this.#settle(job, refused.error, ctx, state, stored !== undefined, refused.decision, trace);
      }
    }

    if (events.has('attempt')) events.emit('attempt', { ...labels(dependency), attempt });

    let value: Result;
    try {
      if (keyError !== undefined) throw keyError;
      const guard = settings.guard;
      const run = () => (key !== undefined && guard ? guard.once(key, () => work(ctx)) : work(ctx));
      value = trace ? await trace.run(run) : await run();
    } catch (error) {
      if (limits) {
        // A call waited past maxPaceWaitMs for its slot: the job is held, no attempt used, nothing filed.
        const held = limitHeldOf(error);
        if (held) {
          ctx.releaseReserved(false);
          const { dependency: heldFor, by, retryInMs } = held;
          return this.#limitHold(limits, job, { type: 'held', dependency: heldFor, by, retryInMs });
        }
        // The job's run was its call (no ctx.call threw it): a Retry-After answer holds its dependency too.
        if (ctx.dependencyOf(error) === undefined) await limits.noteFailure(dependency, error);
        ctx.releaseReserved(false);
      }
      if (settings.isPassThrough?.(error)) return { type: 'pass-through', error };
      // The breaker refused the job's own dependency (its probes are all in flight): hold the job as the
      // gate would, instead of delaying it by the policy.
      if (flow && isBrokenCircuitError(error) && error.dependency === dependency) {
        const action = await flow.heldByBreaker(dependency, error);
        if (action && action.type !== 'run') return this.#hold(flow, job, dependency, action);
      }
      return this.#settle(job, error, ctx, state, stored !== undefined, undefined, trace);
    }
    // A job that made no ctx.call was itself its dependency's call: its success ends probing after a hold.
    ctx.releaseReserved(ctx.calls === 0);
    if (ctx.calls === 0) onSuccess(dependency);
    if (stored !== undefined) await this.#clear(job);
    if (job.note !== undefined) await this.#clearNote(job);
    if (events.has('completed')) events.emit('completed', { ...labels(dependency), attempts: attempt });
    return { type: 'completed', value };
  }

  /**
   * Files the dead letter of a job its queue ended without running it (BullMQ fails the parent of a failed
   * `failParentOnFailure` child on its own), so that it too ends dead-lettered. The queue has ended the job
   * already: there is nothing to delay, and a store that refuses is reported.
   */
  async deadLetterEnded(
    job: JobHandle,
    error: unknown,
    reason: DeadLetterReason,
    detail: string,
    classification: Classification,
  ): Promise<void> {
    const { settings } = this;
    if (!settings.deadLetters) return;
    try {
      const stored = mayHaveAttemptState(job) ? await settings.attempts.readAttempts(job.ref) : undefined;
      if (stored?.deadLettered) return;
      const ctx = new JobCallContext(
        this.dependencyFor(job.name),
        (stored?.attempts ?? 0) + 1,
        undefined,
        () => {},
      );
      const decision: Decision = { action: 'dead-letter', reason, detail, classification };
      await this.#settle(job, error, ctx, stored ?? FRESH, stored !== undefined, decision, undefined, true);
    } catch (bookkeepingError) {
      this.#report(bookkeepingError);
    }
  }

  /**
   * Decides, settles and acts on a failed attempt. A decision that cannot be made (a budget or breaker that
   * throws) runs the processor again later, at most twice per job (counted in the job's own record), then
   * ends the job without the gates; a decided outcome a store refuses is kept and written later, never a
   * reason to run the processor again ({@link OutcomeWriter}).
   */
  async #settle<Result>(
    job: JobHandle,
    error: unknown,
    ctx: JobCallContext,
    state: AttemptState,
    hadState: boolean,
    decided?: Decision,
    trace?: AttemptTrace,
    ended = false,
  ): Promise<RunOutcome<Result>> {
    const { settings } = this;
    const dependency = ctx.dependencyOf(error) ?? ctx.dependency;
    const nowMs = settings.clock.now();
    let decision: Decision;
    if (decided) decision = decided;
    else {
      try {
        decision = await this.#decide(job, error, ctx, state, dependency, nowMs, trace);
      } catch (decideError) {
        const undecided = await this.#undecided<Result>(job, nowMs, decideError, ended);
        if (undecided !== undefined) {
          if (trace) this.#refusedBookkeeping.set(trace, { error: decideError });
          return undecided;
        }
        decision = ungatedDecision(error, decideError, settings.policy.maxAttempts);
      }
    }
    try {
      return await this.#act(job, error, ctx, state, hadState, decision, dependency, nowMs, trace, ended);
    } catch (bookkeepingError) {
      if (trace) this.#refusedBookkeeping.set(trace, { error: bookkeepingError });
      return this.#retryBookkeeping(job, bookkeepingError);
    }
  }

  /** Settles a decided attempt (pure) and writes its one action. */
  async #act(
    job: JobHandle,
    error: unknown,
    ctx: JobCallContext,
    state: AttemptState,
    hadState: boolean,
    decision: Decision,
    dependency: string,
    nowMs: number,
    trace: AttemptTrace | undefined,
    ended: boolean,
  ): Promise<RunOutcome<never>> {
    const { settings } = this;
    if (trace) this.#traced(() => trace.decided(decision, dependency, error));
    const facts: SettleJob = {
      ref: job.ref,
      name: job.name,
      data: job.data,
      opts: job.opts,
      starts: job.starts,
      dependency,
      lastError: describeError(error),
      replays: job.replays ?? 0,
      stalls: job.stalls,
    };
    if (ctx.idempotencyKey !== undefined) facts.idempotencyKey = ctx.idempotencyKey;
    if (job.replayedFrom !== undefined) facts.replayedFrom = job.replayedFrom;
    const settled = (made: Decision) => {
      const settlement = settle(state, made, nowMs, facts);
      const { state: next, action } = settlement;
      // The attempt joins the job's history (state, then record): the record shows every attempt's decision.
      const attempt = { attempt: job.starts, at: nowMs, dependency, error: facts.lastError };
      next.history = appendAttempt(state.history, attemptEntry(attempt, made, action));
      if (action.type === 'dead-letter') action.record.history = next.history;
      // Trace contexts ride along with the job (state, then record) so later attempts and a replay link back.
      const traceLinks = keepTraceLinks(state.traceLinks, trace?.carrier);
      if (traceLinks) {
        next.traceLinks = traceLinks;
        if (action.type === 'dead-letter') action.record.traceLinks = traceLinks;
      }
      return settlement;
    };
    const { state: next, action } = settled(decision);

    let write: PendingWrite | undefined;
    if (action.type === 'retry' || action.type === 'defer')
      write = {
        type: 'retry',
        state: next,
        ttlMs: action.delayMs + this.#ttlMs,
        dueAtMs: action.dueAtMs,
        delayMs: action.delayMs,
        retry: action.retry,
        cause: action.cause,
        chargesAttempt: action.type === 'retry',
        dependency,
        errorClass: facts.lastError.name,
      };
    else if (action.type === 'dead-letter' && settings.deadLetters)
      write = { type: 'dead-letter', record: action.record, state: next, ttlMs: this.#ttlMs };
    if (write) {
      const refused =
        trace && ((refusal: unknown) => this.#refusedBookkeeping.set(trace, { error: refusal }));
      // A retry whose state no store can keep (an id it cannot hold) cannot be counted: it is dead-lettered.
      const deadLetters = settings.deadLetters;
      const unkept =
        write.type === 'retry' && deadLetters
          ? (refusal: unknown): PendingWrite | undefined => {
              const final = settled(unkeptStateDecision(refusal));
              return final.action.type === 'dead-letter'
                ? { type: 'dead-letter', record: final.action.record, state: final.state, ttlMs: this.#ttlMs }
                : undefined;
            }
          : undefined;
      return this.#writer.write(job, { write, tries: 0, since: nowMs }, ended, false, refused, unkept);
    }
    if (hadState) await this.#clear(job);
    const last = this.#errorText ? this.#errorText(facts.lastError, undefined) : facts.lastError;
    const { reason, detail } =
      action.type === 'dead-letter' ? action.record : (action as { reason: string; detail: string });
    return { type: 'failed', message: `${reason}: ${detail}; last error: ${last.message}` };
  }

  /**
   * `decide` threw (a budget or breaker store down, a name a gate refuses). The processor has run and its
   * failure has no decision: a transient refusal runs it again later, at most {@link MAX_BOOKKEEPING_RERUNS}
   * times per job (counted in the job's own record); `undefined` means: end the job without the gates.
   */
  async #undecided<Result>(
    job: JobHandle,
    nowMs: number,
    decideError: unknown,
    ended: boolean,
  ): Promise<RunOutcome<Result> | undefined> {
    if (ended || isPermanentRefusal(decideError)) {
      this.#report(decideError);
      return undefined;
    }
    if (!job.keepNote) return this.#retryBookkeeping(job, decideError);
    const reruns = job.note?.reruns ?? 0;
    if (reruns >= MAX_BOOKKEEPING_RERUNS) {
      this.#report(decideError);
      return undefined;
    }
    this.#report(decideError);
    try {
      await job.keepNote({ ...job.note, reruns: reruns + 1 });
    } catch (noteError) {
      // Not moved: the lock runs out and the queue's stalled-job recovery brings it back, counted there.
      this.#report(noteError);
      return { type: 'delayed' };
    }
    try {
      await job.moveToDelayed(nowMs + bookkeepingDelayMs(reruns + 1, this.#backoff));
    } catch (moveError) {
      this.#report(moveError);
    }
    return { type: 'delayed' };
  }

  /** Flow control's gate; a gate that fails is reported and the job runs (admission still applies). */
  async #gate<Result>(
    flow: RuntimeFlow,
    job: JobHandle,
    dependency: string,
  ): Promise<RunOutcome<Result> | undefined> {
    let action: FlowAction;
    try {
      action = await flow.beforeRun(dependency, { jobId: job.ref.jobId, starts: job.starts });
    } catch (error) {
      this.#report(error);
      return undefined;
    }
    return action.type === 'run' ? undefined : this.#hold(flow, job, dependency, action);
  }

  /**
   * Takes the slots of the dependencies known before the job starts (its own, and the queue's), each kept
   * for the job's first call to it. One held: the slots taken go back and the job is held.
   */
  async #limitGate<Result>(
    limits: RuntimeLimits,
    job: JobHandle,
    ctx: JobCallContext,
    dependency: string,
  ): Promise<RunOutcome<Result> | undefined> {
    const upFront = [dependency];
    const { queueDependency } = limits;
    if (queueDependency !== undefined && queueDependency !== dependency) upFront.push(queueDependency);
    for (const known of upFront) {
      let answer: LimitAnswer;
      try {
        answer = await limits.acquire(known, 1, { beforeStart: true });
      } catch (error) {
        // Limits that fail are reported; the job runs (its calls still ask for their slots).
        this.#report(error);
        continue;
      }
      if (answer.type === 'slot') {
        ctx.reserve(answer.slot);
        continue;
      }
      ctx.releaseReserved(false);
      return this.#limitHold(limits, job, answer);
    }
    return undefined;
  }

  /**
   * Holds a job a limit held, without touching its attempt state and without filing anything: the queue
   * paused (the job put back as it was), or the job delayed.
   */
  async #limitHold<Result>(
    limits: RuntimeLimits,
    job: JobHandle,
    held: Extract<LimitAnswer, { type: 'held' }>,
  ): Promise<RunOutcome<Result>> {
    const action = limits.holdAction(held);
    if (action.type === 'pause') return { type: 'paused', forMs: action.forMs };
    try {
      await job.moveToDelayed(this.settings.clock.now() + action.forMs);
      return { type: 'delayed' };
    } catch (error) {
      return this.#retryBookkeeping(job, error);
    }
  }

  /** Holds a job without running it and without touching its attempt state: nothing was attempted. */
  async #hold<Result>(
    flow: RuntimeFlow,
    job: JobHandle,
    dependency: string,
    action: Exclude<FlowAction, { type: 'run' }>,
  ): Promise<RunOutcome<Result>> {
    if (action.type === 'pause') return { type: 'paused', forMs: action.forMs };
    try {
      const nowMs = this.settings.clock.now();
      if (action.type === 'delay') {
        await job.moveToDelayed(nowMs + action.forMs);
        return { type: 'delayed' };
      }
      // Listed first, then delayed: a crash in between leaves a listed job that comes back on its own.
      await flow.park(dependency, job.ref.jobId);
      await job.moveToDelayed(nowMs + flow.options.parkHorizonMs);
      return { type: 'delayed' };
    } catch (error) {
      return this.#retryBookkeeping(job, error);
    }
  }

  /**
   * Asks the breaker and the budget before a run that holds no grant. `undefined`: run (the budget charged
   * the retry now). Otherwise the refusal's decision, with the error its record would carry. A gate that
   * throws is a bookkeeping failure: the job is delayed and asks again.
   */
  async #admit(
    job: JobHandle,
    state: AttemptState,
    dependency: string,
    trace: AttemptTrace | undefined,
  ): Promise<{ by: 'breaker' | 'budget'; decision: Decision; error: Error } | undefined | 'bookkeeping'> {
    const { settings } = this;
    let decision: Decision | undefined;
    try {
      decision = await admit(
        decideContext({
          policy: settings.policy,
          error: undefined,
          attemptsBefore: state.attempts,
          previousDelayMs: state.previousDelayMs,
          createdAtMs: job.ref.createdAt,
          nowMs: settings.clock.now(),
          random: settings.random,
          dependency,
          hasDeadLetterTarget: settings.deadLetters !== undefined,
          breaker:
            settings.breaker && trace ? this.#tracedBreaker(settings.breaker, trace) : settings.breaker,
          budget: this.#budgetGate(trace),
        }),
      );
    } catch (error) {
      if (trace) this.#refusedBookkeeping.set(trace, { error });
      await this.#retryBookkeeping(job, error);
      return 'bookkeeping';
    }
    if (decision === undefined) return undefined;
    const by = decision.classification.reason === 'breaker-open' ? 'breaker' : 'budget';
    const message =
      by === 'breaker'
        ? `the ${dependency} breaker is open: the run was refused before it called anything`
        : `the ${dependency} retry budget denied the run before it called anything`;
    return { by, decision, error: Object.assign(new Error(message), { name: 'AdmissionRefusedError' }) };
  }

  #decide(
    job: JobHandle,
    error: unknown,
    ctx: JobCallContext,
    state: AttemptState,
    dependency: string,
    nowMs: number,
    trace: AttemptTrace | undefined,
  ): Promise<Decision> {
    const { settings } = this;
    const budget = this.#budgetGate(trace);
    const breaker =
      settings.breaker && trace ? this.#tracedBreaker(settings.breaker, trace) : settings.breaker;
    // A limited dependency's Retry-After holds the dependency (capped at retryAfter.maxMs, then marked
    // down): the retry waits for it whatever onExceeded says, and uses its attempt (the call was made).
    const policy = settings.limits?.isLimited(dependency) ? this.#limitedPolicy : settings.policy;
    return decide(
      decideContext({
        policy,
        // A processor's own UnrecoverableError means "never retry this": stormguard reads it as permanent.
        error: isUnrecoverable(error)
          ? new PermanentError(describeError(error).message, { cause: error })
          : error,
        attemptsBefore: state.attempts,
        previousDelayMs: state.previousDelayMs,
        createdAtMs: job.ref.createdAt,
        nowMs,
        random: settings.random,
        dependency,
        hasIdempotencyKey: ctx.idempotencyKey !== undefined,
        hasDeadLetterTarget: settings.deadLetters !== undefined,
        budget,
        breaker,
      }),
    );
  }

  /**
   * The budget `decide` and admission ask (traced when the attempt is): under flow control in `enforce`
   * mode, one whose refusal holds the job instead of ending it as `onExhausted` says (`budgetUnderFlow`).
   */
  #budgetGate(trace: AttemptTrace | undefined): BudgetGate | undefined {
    const { budget, flow } = this.settings;
    if (!budget) return undefined;
    return budgetUnderFlow(trace ? this.#tracedBudget(budget, trace) : budget, flow);
  }

  #active(instrumentation: JobInstrumentation): boolean {
    try {
      return instrumentation.isActive?.() !== false;
    } catch (error) {
      this.#report(error);
      return false;
    }
  }

  #startTrace(
    instrumentation: JobInstrumentation,
    job: JobHandle,
    dependency: string,
    attempt: number,
    state: AttemptState,
  ): AttemptTrace | undefined {
    const { settings } = this;
    try {
      return instrumentation.startAttempt({
        queue: settings.queue,
        task: job.name,
        jobId: job.ref.jobId,
        dependency,
        attempt,
        replays: job.replays ?? 0,
        earlierAttempts: state.traceLinks ?? [],
        replayedAttempts: job.replayedTraceLinks ?? [],
        ...(job.replayedFrom === undefined ? {} : { replayedFrom: job.replayedFrom }),
      });
    } catch (error) {
      settings.internalError(error);
      return undefined;
    }
  }

  #endTrace(trace: AttemptTrace, outcome: RunOutcome<unknown> | undefined): void {
    const ended: AttemptOutcome =
      outcome === undefined
        ? { type: 'failed' }
        : outcome.type === 'dead-lettered'
          ? { type: 'dead-lettered', recordId: outcome.recordId }
          : // A paused queue puts the job back to run later: for its trace, a delay.
            { type: outcome.type === 'paused' ? 'delayed' : outcome.type };
    const refused = this.#refusedBookkeeping.get(trace);
    this.#traced(() => trace.end(refused ? { type: 'bookkeeping', error: refused.error } : ended));
  }

  /** A tracer's hook that throws is reported; the attempt goes on as if untraced. */
  #traced(hook: () => void): void {
    try {
      hook();
    } catch (error) {
      this.#report(error);
    }
  }

  /** The budget as `decide` asks it, telling the trace what it answered (allowance, spent, denied…). */
  #tracedBudget(budget: RuntimeBudget, trace: AttemptTrace): BudgetGate {
    const told = (dependency: string, verdict: BudgetVerdict) => {
      this.#traced(() => trace.budgetAnswered(dependency, verdict));
      return verdict;
    };
    return {
      get onExhausted() {
        return budget.onExhausted;
      },
      trySpend: (dependency) => {
        const verdict = budget.trySpend(dependency);
        return verdict instanceof Promise
          ? verdict.then((v) => told(dependency, v))
          : told(dependency, verdict);
      },
    };
  }

  #tracedBreaker(breaker: RuntimeBreaker, trace: AttemptTrace): BreakerGate {
    const told = (dependency: string, verdict: BreakerVerdict) => {
      this.#traced(() => trace.breakerAnswered(dependency, verdict));
      return verdict;
    };
    return {
      check: (dependency) => {
        const verdict = breaker.check(dependency);
        return verdict instanceof Promise
          ? verdict.then((v) => told(dependency, v))
          : told(dependency, verdict);
      },
    };
  }

  /**
   * The failure could not be recorded (a store refused a write). The job is tried again later without
   * charging an attempt; if even the move fails, the job stays active, its lock runs out and the queue's
   * stalled-job recovery brings it back. Nothing reaches the queue that it would fail or retry on its own.
   */
  async #retryBookkeeping<Result>(job: JobHandle, error: unknown): Promise<RunOutcome<Result>> {
    this.#report(error);
    try {
      await job.moveToDelayed(this.settings.clock.now() + this.#backoff.firstDelayMs);
    } catch (moveError) {
      this.#report(moveError);
    }
    return { type: 'delayed' };
  }

  /** Gives a completed job its own record back (its rerun count is no longer needed); a refusal is reported only. */
  async #clearNote(job: JobHandle): Promise<void> {
    try {
      await job.keepNote?.(undefined);
    } catch (error) {
      this.#report(error);
    }
  }

  /** Clears a finished job's attempt state; a store that refuses only leaves it to expire. */
  async #clear(job: JobHandle): Promise<void> {
    try {
      await this.settings.attempts.clearAttempts(job.ref);
    } catch (error) {
      this.#report(error);
    }
  }
}

/** The job's idempotency key; a key function that throws is a bug no retry fixes (a permanent failure). */
const NO_KEY: { key?: string; error?: PermanentError } = Object.freeze({});

function keyOfJob(keyOf: (() => string | undefined) | undefined): { key?: string; error?: PermanentError } {
  if (!keyOf) return NO_KEY;
  try {
    const key = keyOf();
    return key === undefined ? {} : { key };
  } catch (error) {
    return {
      error: new PermanentError(`idempotency.key threw: ${describeError(error).message}`, { cause: error }),
    };
  }
}

/**
 * A job that stalled more often than allowed: its worker kept crashing or blocking while running it. It is
 * dead-lettered without running again, as `max-attempts`.
 */
function stalledOut(
  stalls: number,
  limit: number,
  hasDeadLetterTarget: boolean,
): { error: Error; decision: Decision } {
  const detail = `stalled ${stalls} times, more than maxStalledCount (${limit}) allows: its worker crashed or blocked while running it`;
  return {
    error: Object.assign(new Error(detail), { name: 'StalledJobError' }),
    decision: {
      action: hasDeadLetterTarget ? 'dead-letter' : 'fail',
      reason: 'max-attempts',
      detail,
      classification: { retryable: false, reason: 'stalled' },
    },
  };
}

function isUnrecoverable(error: unknown): boolean {
  return (
    typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'UnrecoverableError'
  );
}

/**
 * The decision for a failed attempt when `decide` could not ask its gates (they threw for good, or past the
 * reruns allowed): the job ends. A failure no retry fixes stays `permanent`; a retryable one is filed as
 * `budget-exhausted` (no grant could be had), so a replay can bring it back once the gates answer.
 */
function ungatedDecision(error: unknown, decideError: unknown, maxAttempts: number): Decision {
  const refusal = describeError(decideError).name;
  const retryable = !isPermanentError(error) && !isUnrecoverable(error);
  return retryable
    ? {
        action: 'dead-letter',
        reason: 'budget-exhausted',
        detail: `the retry could not be granted: the budget or breaker refused to decide (${refusal}); at most ${maxAttempts} attempts`,
        classification: { retryable: true, reason: 'undecided' },
      }
    : {
        action: 'dead-letter',
        reason: 'permanent',
        detail: `not retryable, and the budget or breaker refused to decide (${refusal})`,
        classification: { retryable: false, reason: 'undecided' },
      };
}

/** The redaction stormguard applies to an error before it leaves (queue, logs, events), if any is configured. */
function errorRedactor(
  settings: JobRuntimeSettings,
): ((error: ErrorText, record: DeadLetterRecord | undefined) => ErrorText) | undefined {
  const hook = settings.deadLetters?.redaction;
  if (hook) return (error, record) => redactErrorText(error, record ?? bareRecord(settings.queue), hook);
  const redactError = settings.instrumentation?.redactError;
  if (!redactError) return undefined;
  return (error) => {
    try {
      const answer = redactError({ ...error });
      if (answer && typeof answer.name === 'string' && typeof answer.message === 'string')
        return keptStackRedacted(error, answer);
    } catch {
      // Fall through: a hook that fails must not let the raw text out.
    }
    return { name: error.name, message: `${error.name} (redaction failed)` };
  };
}

/** A record with nothing but the queue, for redacting an error that belongs to no job. */
function bareRecord(queue: string): DeadLetterRecord {
  return {
    queue,
    jobId: '-',
    createdAt: 0,
    name: '',
    data: undefined,
    opts: {},
    reason: 'permanent',
    detail: '',
    lastError: { name: 'Error', message: '', classification: { retryable: false, reason: 'unknown' } },
    attemptsMade: 0,
    dependency: '',
    deadLetteredAt: 0,
    replays: 0,
  };
}

/** An error carrying only the redacted text: its class, message and (redacted) stack; no cause. */
function redactedError(text: ErrorText): Error {
  const error = new Error(text.message);
  error.name = text.name;
  error.stack = text.stack ?? `${text.name}: ${text.message}`;
  return error;
}

/** The decision for a failed attempt whose retry cannot be counted: no store can keep the job's state. */
function unkeptStateDecision(refusal: unknown): Decision {
  return {
    action: 'dead-letter',
    reason: 'permanent',
    detail: `its retry could not be scheduled: the attempt state cannot be kept (${refusalText(refusal)})`,
    classification: { retryable: false, reason: 'unkept-state' },
  };
}
