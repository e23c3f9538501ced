import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import { dependencyNameProblem, MAX_DEPENDENCY_LENGTH } from '../budget/dependency-name.js';
import { type Clock, systemClock } from '../common/clock.js';
import type { EventBus } from '../common/events.js';
import type { RandomSource } from '../common/random.js';
import { PermanentError } from '../errors/permanent-error.js';
import { classify } from '../policy/classify/classify.js';
import { decide } from '../policy/decide.js';
import type { Decision, RetryPolicy } from '../policy/types.js';
import {
  type AttemptState,
  type DeadLetteredState,
  type JobHashLocation,
  parseAttemptState,
  readAttemptState,
  writeAttemptState,
} from './attempts.js';
import { type CallContext, JobCallContext } from './call-context.js';
import type { DeadLetterRecord, JobLabels, WorkerEvents } from './types.js';
import { deadLetteredStateOf, deadLetterRecordFrom, describeError } from './worker-dead-letter.js';
import type { StormguardWorkerOptions, WorkerBreaker, WorkerBudget } from './worker-options.js';

/**
 * A stormguard processor: BullMQ's job plus a {@link CallContext}. Return the job's result; throw to fail
 * the attempt (stormguard then decides: retry, dead-letter or fail).
 *
 * @example
 * const index: StormguardProcessor<{ docId: string }> = async (job, ctx) =>
 *   ctx.call('search', () => search.index(job.data.docId));
 */
export type StormguardProcessor<Data = unknown, Result = unknown, Name extends string = string> = (
  job: Job<Data, Result, Name>,
  ctx: CallContext,
) => Promise<Result>;

/** Where dead letters go, as the runner uses it (a `DeadLetterQueue`, opened on first use). */
export interface DeadLetterSink {
  readonly name: string;
  add(record: DeadLetterRecord): Promise<unknown>;
}

/** What a {@link JobRunner} needs; `createWorker` builds it from the user's options. */
export interface RunnerSettings<Data, Result, Name extends string> {
  queue: string;
  processor: StormguardProcessor<Data, Result, Name>;
  policy: RetryPolicy;
  budget: WorkerBudget | undefined;
  breaker: WorkerBreaker | undefined;
  dependencies: Readonly<Record<string, string>>;
  deadLetters: (() => DeadLetterSink) | undefined;
  idempotency: StormguardWorkerOptions<Data, Result, Name>['idempotency'];
  clock: Clock;
  random: RandomSource;
  events: EventBus<WorkerEvents>;
  warn: (message: string) => void;
  /** Reports a failure of stormguard's own bookkeeping (the worker emits it as BullMQ's 'error'). */
  internalError: (error: unknown) => void;
  /** Where a job's hash lives, for the attempt state. */
  locate: (jobId: string) => JobHashLocation;
}

/**
 * How long a job waits when its failure could not be handled (the dead-letter queue or Redis refused a
 * write): it is retried later without charging an attempt, so it is neither lost nor failed for a reason
 * that is not its own.
 */
const BOOKKEEPING_RETRY_MS = 5_000;

/** BullMQ's own control-flow errors: a processor may throw them on purpose, and they pass through untouched. */
const BULLMQ_CONTROL_ERRORS = new Set([
  'DelayedError',
  'WaitingError',
  'WaitingChildrenError',
  'RateLimitError',
]);

/**
 * Runs one job under stormguard's control: the processor with a call context, success accounting, and,
 * on failure, `decide` and what it says. BullMQ never retries on its own: a retry is a `moveToDelayed`
 * followed by `DelayedError` (BullMQ's contract for "rescheduled by the processor"), and a terminal
 * decision is an `UnrecoverableError` (BullMQ never retries it, whatever the job's `attempts`).
 */
export class JobRunner<Data, Result, Name extends string> {
  /** Attempt state that arrived with each job (see `StormguardWorker.createJob`): no extra read per job. */
  readonly #arrived = new WeakMap<Job, AttemptState>();
  /** Jobs BullMQ marked to fail unprocessed (stalled more than `maxStalledCount` times), with its reason. */
  readonly #condemned = new WeakMap<Job, string>();
  readonly #warnedNames = new Set<string>();
  readonly #isFailure: (error: unknown) => boolean;
  readonly #onSuccess: (dependency: string) => void;

  constructor(private readonly settings: RunnerSettings<Data, Result, Name>) {
    const { policy, clock, budget } = settings;
    // What counts against a dependency's breaker: a failure the policy would retry (a timeout, a 503).
    // A permanent error means the dependency answered; for its health that is a success.
    this.#isFailure = (error) => classify(error, policy, clock.now()).retryable;
    // The work is done when this runs: a budget that throws is reported, never turned into a failed job.
    this.#onSuccess = budget
      ? (dependency) => {
          try {
            budget.recordSuccess(dependency);
          } catch (error) {
            settings.internalError(error);
          }
        }
      : () => {};
  }

  /** Remembers the attempt state read with the job's hash (`raw` is the stored field, if any). */
  arrived(job: Job, raw: string | undefined): void {
    this.#arrived.set(job, parseAttemptState(raw));
  }

  /**
   * Takes over a job BullMQ would fail without running it: it stalled more than `maxStalledCount` times (its
   * worker kept crashing or blocking while running it), or it is a parent added with `failParentOnFailure`
   * whose child failed. Instead of vanishing into BullMQ's failed set, it is dead-lettered without running
   * again, with reason `max-attempts` or `permanent` respectively.
   */
  condemned(job: Job, why: string): void {
    this.#condemned.set(job, why);
  }

  /**
   * The job's dependency: `dependencies[job.name]`, or the job name when it has no mapping. A job name that
   * cannot be a dependency name (whitespace, braces, control characters, over 200 characters; BullMQ allows
   * them) has those characters replaced by `_` and is cut to 200: `send email` → `send_email`.
   */
  dependencyFor(name: string): string {
    const mapped = this.settings.dependencies[name];
    if (mapped !== undefined) return mapped;
    if (dependencyNameProblem(name) === undefined) return name;
    return name.replace(/[{}\s\p{Cc}]/gu, '_').slice(0, MAX_DEPENDENCY_LENGTH) || 'unnamed';
  }

  /** Processes one job; the BullMQ processor of a stormguard worker. */
  async run(job: Job<Data, Result, Name>, token: string | undefined): Promise<Result> {
    const { settings } = this;
    const state = this.#arrived.get(job) ?? (await readAttemptState(settings.locate(job.id ?? '')));
    this.#arrived.delete(job);
    if (state.deadLettered) {
      // A worker dead-lettered this job and crashed before failing it: stalled-job recovery brought it back.
      // Running it again could complete it while its record waits in the dead-letter queue (and a replay
      // would run it a third time): file the record again (a no-op when it got there) and fail the job.
      this.#condemned.delete(job);
      const deadLettered = state.deadLettered;
      const outcome = await this.#guarded(job, token, () => this.#refile(job, state, deadLettered));
      if (outcome instanceof Error) throw outcome;
      return outcome as Result;
    }
    const dependency = this.dependencyFor(job.name);
    const attempt = state.attempts + 1;
    this.#warnOnAttemptsMismatch(job);
    const { key: idempotencyKey, error: keyError } = this.#keyOf(job);
    const { events } = settings;
    const labels = (dep = dependency): JobLabels => ({
      queue: settings.queue,
      task: job.name,
      dependency: dep,
    });
    const onSuccess = events.has('success')
      ? (dep: string) => {
          this.#onSuccess(dep);
          events.emit('success', labels(dep));
        }
      : this.#onSuccess;
    const ctx = new JobCallContext(
      dependency,
      attempt,
      idempotencyKey,
      onSuccess,
      settings.breaker,
      this.#isFailure,
    );
    if (events.has('attempt')) events.emit('attempt', { ...labels(), attempt });

    const condemned = this.#condemned.get(job);
    if (condemned !== undefined) {
      const { error, decision } = condemnation(condemned, settings.deadLetters !== undefined);
      const outcome = await this.#afterFailure(job, token, error, ctx, state, decision);
      if (outcome instanceof Error) throw outcome;
      return outcome as Result;
    }

    let result: Result;
    try {
      if (keyError !== undefined) throw keyError;
      const work = () => settings.processor(job, ctx);
      result =
        idempotencyKey !== undefined && settings.idempotency
          ? await settings.idempotency.guard.once(idempotencyKey, work)
          : await work();
    } catch (error) {
      if (isNamed(error, BULLMQ_CONTROL_ERRORS)) throw error;
      const outcome = await this.#afterFailure(job, token, error, ctx, state);
      if (outcome instanceof Error) throw outcome;
      // A dead-lettered flow child that BullMQ would otherwise leave its parent waiting on (see below).
      return outcome as Result;
    }
    if (ctx.calls === 0) onSuccess(dependency);
    if (events.has('completed')) events.emit('completed', { ...labels(), attempts: attempt });
    return result;
  }

  /**
   * Decides what a failed attempt leads to, does it, and returns the error the processor must throw, or
   * the {@link DeadLetteredMarker} it must return.
   */
  #afterFailure(
    job: Job<Data, Result, Name>,
    token: string | undefined,
    error: unknown,
    ctx: JobCallContext,
    state: AttemptState,
    decided?: Decision,
  ): Promise<Error | DeadLetteredMarker> {
    return this.#guarded(job, token, () => this.#settle(job, token, error, ctx, state, decided));
  }

  /** Runs the failure bookkeeping `work`; when Redis or the dead-letter queue refuses it, delays the job. */
  async #guarded(
    job: Job<Data, Result, Name>,
    token: string | undefined,
    work: () => Promise<Error | DeadLetteredMarker>,
  ): Promise<Error | DeadLetteredMarker> {
    try {
      return await work();
    } catch (bookkeepingError) {
      // The failure could not be filed (Redis or the dead-letter queue refused a write). Try again later
      // without charging an attempt; if even that fails, BullMQ's stalled-job recovery picks the job up:
      // the job stays active, its lock runs out and it goes back to wait. Any other error thrown from here
      // would reach BullMQ, which would fail the job outside the dead-letter queue, or retry it on its own.
      this.settings.internalError(bookkeepingError);
      try {
        await job.moveToDelayed(systemClock.now() + BOOKKEEPING_RETRY_MS, token);
      } catch (moveError) {
        this.settings.internalError(moveError);
      }
      return new DelayedError();
    }
  }

  async #settle(
    job: Job<Data, Result, Name>,
    token: string | undefined,
    error: unknown,
    ctx: JobCallContext,
    state: AttemptState,
    decided: Decision | undefined,
  ): Promise<Error | DeadLetteredMarker> {
    const { settings } = this;
    const dependency = ctx.dependencyOf(error) ?? ctx.dependency;
    const attemptsMade = state.attempts + 1;
    const nowMs = settings.clock.now();
    const deadLetters = settings.deadLetters;
    const decision: Decision =
      decided ??
      (await decide({
        policy: settings.policy,
        // A processor's own UnrecoverableError means "never retry this": stormguard reads it as permanent.
        error: isNamed(error, UNRECOVERABLE)
          ? new PermanentError(describeError(error).message, { cause: error })
          : error,
        attemptsMade,
        createdAtMs: job.timestamp,
        nowMs,
        random: settings.random,
        dependency,
        ...(state.previousDelayMs === undefined ? {} : { previousDelayMs: state.previousDelayMs }),
        hasIdempotencyKey: ctx.idempotencyKey !== undefined,
        hasDeadLetterTarget: deadLetters !== undefined,
        ...(settings.budget ? { budget: settings.budget } : {}),
        ...(settings.breaker ? { breaker: settings.breaker } : {}),
      }));
    const labels: JobLabels = { queue: settings.queue, task: job.name, dependency };
    const firstFailedAt = state.firstFailedAt ?? nowMs;

    if (decision.action === 'retry') {
      const charged = decision.chargesAttempt;
      const next: AttemptState = {
        attempts: charged ? attemptsMade : state.attempts,
        deferrals: state.deferrals + (charged ? 0 : 1),
        firstFailedAt,
      };
      const previousDelayMs = charged ? decision.delayMs : state.previousDelayMs;
      if (previousDelayMs !== undefined) next.previousDelayMs = previousDelayMs;
      // State first, then the move: a crash in between over-counts an attempt, never under-counts one.
      await writeAttemptState(settings.locate(job.id ?? ''), next);
      await job.moveToDelayed(systemClock.now() + decision.delayMs, token);
      if (settings.events.has('retry'))
        settings.events.emit('retry', {
          ...labels,
          delayMs: decision.delayMs,
          retry: decision.retry,
          cause: decision.cause,
          chargesAttempt: charged,
          errorClass: describeError(error).name,
        });
      return new DelayedError();
    }

    if (decision.action === 'dead-letter' && deadLetters) {
      const deadLettered = deadLetteredStateOf({
        queue: settings.queue,
        reason: decision.reason,
        detail: decision.detail,
        error,
        classification: decision.classification,
        attemptsMade,
        dependency,
        idempotencyKey: ctx.idempotencyKey,
        firstFailedAt,
        nowMs,
      });
      const dead: AttemptState = {
        attempts: attemptsMade,
        deferrals: state.deferrals,
        firstFailedAt,
        deadLettered,
      };
      if (state.previousDelayMs !== undefined) dead.previousDelayMs = state.previousDelayMs;
      // The mark before the record: a worker that crashes before the job fails leaves a job that a later
      // worker files again (idempotently) and fails, without running it again.
      await writeAttemptState(settings.locate(job.id ?? ''), dead);
      return this.#file(deadLetters(), job, dead, deadLettered);
    }
    return new UnrecoverableError(
      `${decision.reason}: ${decision.detail}; last error: ${describeError(error).message}`,
    );
  }

  /** Files the dead-letter record of a job its state says was dead-lettered, then fails the job. */
  #refile(
    job: Job<Data, Result, Name>,
    state: AttemptState,
    deadLettered: DeadLetteredState,
  ): Promise<Error | DeadLetteredMarker> {
    const deadLetters = this.settings.deadLetters;
    if (deadLetters) return this.#file(deadLetters(), job, state, deadLettered);
    // Dead letters were turned off since: fail it as the worker that dead-lettered it would have.
    return Promise.resolve(
      new UnrecoverableError(
        `${deadLettered.reason}: ${deadLettered.detail}; last error: ${deadLettered.lastError.message}`,
      ),
    );
  }

  /**
   * Files the record (idempotent by original job id) and returns what fails the job: an
   * `UnrecoverableError`, or the {@link DeadLetteredMarker} that completes a flow child whose parent would
   * otherwise wait forever.
   */
  async #file(
    sink: DeadLetterSink,
    job: Job<Data, Result, Name>,
    state: AttemptState,
    deadLettered: DeadLetteredState,
  ): Promise<Error | DeadLetteredMarker> {
    const { settings } = this;
    const dependency = deadLettered.dependency || this.dependencyFor(job.name);
    const record = deadLetterRecordFrom(
      job as Job,
      settings.queue,
      { ...deadLettered, dependency, at: deadLettered.at || settings.clock.now() },
      state.firstFailedAt ?? deadLettered.at,
    );
    await sink.add(record);
    settings.events.emit('dead-letter', {
      queue: settings.queue,
      task: job.name,
      dependency,
      reason: deadLettered.reason,
    });
    if (parentWouldWaitForever(job as Job))
      return {
        stormguard: 'dead-lettered',
        reason: deadLettered.reason,
        deadLetterQueue: sink.name,
        jobId: record.jobId,
      };
    return new UnrecoverableError(
      `dead-lettered to "${sink.name}" (${deadLettered.reason}): ${deadLettered.detail}; last error: ${deadLettered.lastError.message}`,
    );
  }

  /** The job's idempotency key; a key function that throws is a bug no retry fixes (a permanent failure). */
  #keyOf(job: Job<Data, Result, Name>): { key?: string; error?: PermanentError } {
    const keyFn = this.settings.idempotency?.key;
    if (!keyFn) return {};
    try {
      const key = keyFn(job);
      return key === undefined ? {} : { key };
    } catch (error) {
      return {
        error: new PermanentError(`idempotency.key threw: ${describeError(error).message}`, { cause: error }),
      };
    }
  }

  #warnOnAttemptsMismatch(job: Job<Data, Result, Name>): void {
    const attempts = job.opts.attempts;
    if (attempts === undefined || attempts <= 1 || attempts === this.settings.policy.maxAttempts) return;
    if (this.#warnedNames.has(job.name)) return;
    this.#warnedNames.add(job.name);
    this.settings.warn(
      `queue "${this.settings.queue}": job "${job.name}" was added with BullMQ attempts: ${attempts}, but policy "${this.settings.policy.name}" allows ${this.settings.policy.maxAttempts}; stormguard's policy decides and BullMQ's attempts and backoff are ignored (add jobs without attempts, or make them match)`,
    );
  }
}

/**
 * What a dead-lettered flow child completes with instead of failing, when failing it would leave its parent
 * waiting forever. The parent sees it among `getChildrenValues()` and can tell the child's work was not done.
 *
 * @example
 * const values = Object.values(await parent.getChildrenValues());
 * const skipped = values.filter((v) => (v as DeadLetteredMarker | undefined)?.stormguard === 'dead-lettered');
 */
export interface DeadLetteredMarker {
  stormguard: 'dead-lettered';
  reason: string;
  deadLetterQueue: string;
  jobId: string;
}

/**
 * True for a flow child with none of BullMQ's on-failure options: BullMQ keeps the parent of a failed
 * child waiting for it, and a replay enqueues the child anew without its parent, so the parent would wait
 * forever. Such a child is completed with a {@link DeadLetteredMarker}; every other dead-lettered job fails.
 */
function parentWouldWaitForever(job: Job): boolean {
  if (!job.parentKey && !job.parent) return false;
  const opts = job.opts as Record<string, unknown>;
  return !(
    opts.failParentOnFailure ||
    opts.continueParentOnFailure ||
    opts.ignoreDependencyOnFailure ||
    opts.removeDependencyOnFailure
  );
}

/**
 * Why BullMQ condemned a job, as an error and a terminal decision. BullMQ leaves the same mark for two
 * causes: the job stalled more than `maxStalledCount` times, or (for a parent added with
 * `failParentOnFailure`) one of its children failed, in which case the mark reads `child <key> failed`.
 */
function condemnation(why: string, hasDeadLetterTarget: boolean): { error: Error; decision: Decision } {
  const action = hasDeadLetterTarget ? 'dead-letter' : 'fail';
  if (why.startsWith('child ')) {
    return {
      error: Object.assign(new Error(why), { name: 'ChildJobFailedError' }),
      decision: {
        action,
        reason: 'permanent',
        detail: `${why} and the job was added with failParentOnFailure: the child's own dead letter says why`,
        classification: { retryable: false, reason: 'child-failed' },
      },
    };
  }
  return {
    error: Object.assign(new Error(`${why} (maxStalledCount)`), { name: 'StalledJobError' }),
    decision: {
      action,
      reason: 'max-attempts',
      detail:
        'stalled more times than maxStalledCount allows: its worker crashed or blocked while running it',
      classification: { retryable: false, reason: 'stalled' },
    },
  };
}

const UNRECOVERABLE = new Set(['UnrecoverableError']);

function isNamed(error: unknown, names: ReadonlySet<string>): boolean {
  return (
    typeof error === 'object' && error !== null && names.has((error as { name?: unknown }).name as string)
  );
}
