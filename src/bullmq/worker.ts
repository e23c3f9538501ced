import { DelayedError, Job, Queue, UnrecoverableError, Worker, type WorkerListener } from 'bullmq';
import { dependencyNameProblem } from '../budget/dependency-name.js';
import { systemClock } from '../common/clock.js';
import { formatDuration } from '../common/duration.js';
import { EventBus } from '../common/events.js';
import { systemRandom } from '../common/random.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { isTransactionRollback, transactionRollbackState } from '../policy/classify/database.js';
import type { RetryPolicy } from '../policy/types.js';
import type { CallContext } from '../runtime/call-context.js';
import type { DeadLetterStore } from '../runtime/contracts.js';
import {
  type FlowBreaker,
  FlowController,
  flowBudgetOf,
  type PromoteResult,
} from '../runtime/flow-control/controller.js';
import type { JobHandle } from '../runtime/job-handle.js';
import { JobRuntime } from '../runtime/job-runtime.js';
import type { LimitController } from '../runtime/limits/controller.js';
import {
  checkWorkerLimits,
  flowOptionsWithoutRateAlias,
  workerLimitController,
} from '../runtime/limits/worker-limits.js';
import { AutoReplay, checkAutoReplayOptions } from '../runtime/replay/auto-replay.js';
import { resolveWorkerPolicy } from '../runtime/resolve-policy.js';
import type { RunOutcome } from '../runtime/run-outcome.js';
import type { WorkerEvents } from '../runtime/worker-events.js';
import { bullmqJobHandle } from './bullmq-job-handle.js';
import { bullmqReplayQueue } from './bullmq-replay-queue.js';
import { BULLMQ_DEFAULT_PREFIX, clusterPrefixProblem } from './cluster-prefix.js';
import { defaultDeadLetters } from './default-dead-letters.js';
import { defaultLimitStore, hasDefaultLimitStore } from './default-limit-store.js';
import { RunLoopErrors } from './run-loop-errors.js';
import {
  checkWorkerOptionNames,
  type StormguardWorkerOptions,
  type WorkerBreaker,
  type WorkerBudget,
} from './worker-options.js';

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
  /** The queue whose dead letters hold the child's record. */
  queue: string;
  /** The record's id in the dead-letter store. */
  recordId: string;
  jobId: string;
}

/**
 * BullMQ's `maxStalledCount` as stormguard hands it to BullMQ: as good as unbounded, so BullMQ never fails
 * a stalled job on its own. Past its limit BullMQ fails a job without calling the processor, straight into
 * its failed set, where no dead letter is filed. stormguard counts instead: the processor reads the job's
 * `stalledCounter` (BullMQ's public count of stalled-job recoveries, the very number BullMQ compares) and
 * dead-letters a job past the user's `maxStalledCount` as `max-attempts` (classification `stalled`),
 * without running it. The PostgreSQL backend keeps the count in an integer column: hence 2^31 − 1.
 */
const UNBOUNDED_STALLS = 2_147_483_647;

/**
 * How many times a job's completion is written on BullMQ's PostgreSQL backend when its transaction loses a
 * conflict: the server picks one victim per deadlock, so a second try almost always commits.
 */
const COMPLETION_TRIES = 5;

/** BullMQ's own control-flow errors: a processor may throw them on purpose, and they pass through untouched. */
const BULLMQ_CONTROL_ERRORS = new Set([
  'DelayedError',
  'WaitingError',
  'WaitingChildrenError',
  'RateLimitError',
]);

/**
 * A BullMQ `Worker` (it is one: every BullMQ method and event works) whose processor runs under
 * stormguard's job runtime: `ctx.call` attribution, budget and breaker, `decide` on every failed attempt,
 * dead letters. Only BullMQ's public API is used, so it runs on BullMQ 5 and 6, on Redis and on BullMQ 6's
 * PostgreSQL backend. Build it with {@link createWorker}.
 *
 * @example
 * const worker: StormguardWorker<{ docId: string }> = createWorker('index', processor, { connection, policy: 'email', deadLetters });
 * worker.on('failed', (job, err) => console.log(job?.id, err.message)); // BullMQ's events still work
 * worker.events.on('retry', (e) => console.log(`${e.dependency}: retry ${e.retry} in ${e.delayMs} ms`));
 */
export class StormguardWorker<Data = unknown, Result = unknown, Name extends string = string> extends Worker<
  Data,
  Result,
  Name
> {
  /** 'attempt', 'success', 'retry', 'dead-letter', 'completed': metrics and logs subscribe here. */
  readonly events: EventBus<WorkerEvents>;
  /** The resolved retry policy. */
  readonly policy: RetryPolicy;
  /** The dead-letter store, or `undefined` when dead letters are turned off. */
  readonly deadLetters: DeadLetterStore | undefined;
  readonly #budget: WorkerBudget | undefined;
  readonly #breaker: WorkerBreaker | undefined;
  /** Flow control, when the options ask for it. */
  readonly flow: FlowController | undefined;
  /**
   * Fleet-wide limits, when the options ask for them (`limits`, `limitsOptions`) or flow control brings a
   * store (operators' pauses and overrides): `status()` for gauges.
   */
  readonly limits: LimitController | undefined;
  /** Closes the store limits opened themselves (their zero-config default), if any. */
  readonly #closeLimitStore: () => Promise<void>;
  readonly #registered: Promise<void>;
  /** Closes what the worker opened itself: the client of its default dead-letter store. */
  readonly #closeOwn: () => Promise<void>;
  /** Automatic replay of the dead letters an outage left, when the options ask for it. */
  readonly #autoReplay: AutoReplay | undefined;
  /** The queue automatic replay adds jobs to, opened on first use. */
  #replayQueue: Queue | undefined;
  /** Dead letters being filed for jobs BullMQ failed without running them; close() waits for them. */
  readonly #filing = new Set<Promise<void>>();
  #closed: Promise<void> | undefined;
  /**
   * True on a backend (BullMQ 6's PostgreSQL): a job's completion that lost a transaction conflict (SQLSTATE
   * 40P01, 40001) is written again (see `handleCompleted`). On Redis no completion can fail that way.
   */
  readonly #retriesConflicts: boolean;
  /** Jitters the pause between two writes of a completion. */
  readonly #random: () => number;
  /** The run loop's errors: backoff while fetching fails, one clear error and a close when no retry can fix it. */
  readonly #runLoop = new RunLoopErrors({
    queue: this.name,
    stopped: new Promise<void>((resolve) => this.once('closing', () => resolve())),
    onFatal: (error) => this.#closeOnFatal(error),
    onConflict: (error, again) => this.#conflicted('fetch', error, again),
  });

  constructor(
    queueName: string,
    processor: StormguardProcessor<Data, Result, Name>,
    options: StormguardWorkerOptions<Data, Result, Name>,
  ) {
    checkOptions(queueName, processor, options);
    const policy = resolveWorkerPolicy(options.policy);
    checkKeyLifetime(policy, options.idempotency?.guard.ttlMs);
    const { connection, concurrency, workerOptions = {}, backend } = options;
    const maxStalls = workerOptions.maxStalledCount ?? 1;
    // The processor is bound after super(): BullMQ takes it in its constructor, the runtime needs `this`.
    const bound: { process?: (job: Job<Data, Result, Name>, token?: string) => Promise<Result> } = {};
    const bullOptions = {
      ...workerOptions,
      connection,
      ...(concurrency === undefined ? {} : { concurrency }),
      maxStalledCount: UNBOUNDED_STALLS,
      autorun: false,
    };
    // BullMQ 6 takes a backend factory as the fourth argument; BullMQ 5 a connection class, never passed.
    const backendArgument = (backend === undefined ? [] : [backend]) as [];
    super(
      queueName,
      (job, token) => (bound.process as NonNullable<typeof bound.process>)(job, token),
      bullOptions as ConstructorParameters<typeof Worker>[2],
      ...backendArgument,
    );
    this.policy = policy;
    this.#retriesConflicts = backend !== undefined;
    this.#random = options.random ?? systemRandom;
    this.#budget = options.budget;
    this.#breaker = options.breaker;
    const fallback = options.deadLetters === undefined ? defaultDeadLetters(connection) : undefined;
    this.#closeOwn = fallback?.close ?? (async () => {});
    this.deadLetters = options.deadLetters === false ? undefined : (options.deadLetters ?? fallback?.store);
    // A throwing listener (a broken metrics hook) is reported, and never fails a job.
    this.events = new EventBus<WorkerEvents>((error) => this.#report(error));
    this.flow = options.flowControl
      ? new FlowController(flowOptionsWithoutRateAlias(options.flowControl), {
          queue: queueName,
          breaker: options.breaker as unknown as FlowBreaker,
          clock: options.clock ?? systemClock,
          emit: (event, payload) => this.events.emit(event, payload as WorkerEvents[typeof event]),
          internalError: (error) => this.#report(error),
          pauseQueue: (forMs) => this.rateLimit(forMs),
          budget: flowBudgetOf(options.budget),
          worker: workerOptions.name,
        })
      : undefined;
    this.flow?.watch(Object.values(options.dependencies ?? {}));
    const limits = workerLimitController(options, {
      queue: queueName,
      policy,
      clock: options.clock ?? systemClock,
      random: options.random ?? systemRandom,
      emit: (event, payload) => this.events.emit(event, payload as WorkerEvents[typeof event]),
      internalError: (error) => this.#report(error),
      pauseQueue: (forMs) => this.rateLimit(forMs),
      defaultStore: () => defaultLimitStore(connection, backend),
    });
    this.limits = limits?.controller;
    this.#closeLimitStore = limits?.own?.close ?? (async () => {});
    const runtime = new JobRuntime({
      queue: queueName,
      policy,
      budget: options.budget,
      breaker: options.breaker,
      dependencies: options.dependencies ?? {},
      attempts: (options.attemptState ?? this.deadLetters) as NonNullable<typeof options.attemptState>,
      deadLetters: this.deadLetters,
      guard: options.idempotency?.guard,
      clock: options.clock ?? systemClock,
      random: options.random ?? systemRandom,
      events: this.events,
      internalError: (error) => this.#report(error),
      maxStalls,
      isPassThrough: (error) => isNamed(error, BULLMQ_CONTROL_ERRORS),
      instrumentation: options.instrumentation,
      flow: this.flow,
      limits: this.limits,
      bookkeepingBackoff: options.bookkeepingBackoff,
    });
    const warn = options.onWarning ?? ((message) => process.emitWarning(message, 'StormguardWarning'));
    if (options.flowControl?.maxRatePerSecond !== undefined)
      warn(
        `queue "${queueName}": flowControl.maxRatePerSecond is deprecated: give limits: { <dependency>: { maxRatePerSecond } } instead (docs/limits.md); it is enforced as limits now`,
      );
    const warnedNames = new Set<string>();
    const keyFn = options.idempotency?.key;
    // Every error the processor hands BullMQ for a failure is stormguard's own: a 'failed' event with any
    // other error is a job BullMQ failed without calling the processor. Only failures are remembered.
    const ours = new WeakSet<Error>();
    // Jobs whose processor succeeded: a 'failed' event for one is a completion BullMQ could not write.
    const succeeded = new WeakSet<object>();
    bound.process = async (job, token) => {
      warnOnAttemptsMismatch(job, queueName, policy, warnedNames, warn);
      const outcome: RunOutcome<Result> = await runtime.run(
        bullmqJobHandle(job as Job, token, queueName),
        (ctx) => processor(job, ctx),
        keyFn && (() => keyFn(job)),
      );
      // Flow control paused the queue (BullMQ's rate limit: no worker of the queue fetches until it ends)
      // and hands this job back: it goes back to wait as it was.
      if (outcome.type === 'paused') throw Worker.RateLimitError();
      if (outcome.type === 'completed') succeeded.add(job);
      return settleInBullMQ(job as Job, outcome, queueName, ours);
    };
    this.flow?.startReleasing((jobId) => this.#promote(jobId));
    const deadLetters = this.deadLetters;
    this.#autoReplay =
      options.autoReplay && deadLetters
        ? new AutoReplay(options.autoReplay, {
            queue: queueName,
            store: deadLetters,
            jobs: () => {
              this.#replayQueue ??= new Queue(
                queueName,
                {
                  connection,
                  ...(workerOptions.prefix === undefined ? {} : { prefix: workerOptions.prefix }),
                } as ConstructorParameters<typeof Queue>[1],
                ...(backendArgument as []),
              );
              return bullmqReplayQueue(this.#replayQueue);
            },
            events: this.events,
            ...(hasState(options.budget) ? { budget: options.budget } : {}),
            ...(hasState(options.breaker) ? { breaker: options.breaker } : {}),
            clock: options.clock ?? systemClock,
            report: (error) => this.#report(error),
          })
        : undefined;
    this.on('failed', (job, error) => {
      // BullMQ fails some jobs without calling the processor: the parent of a failed failParentOnFailure
      // child (and a job past maxStartedAttempts). It has ended in BullMQ's failed set; its dead letter is
      // filed now, so it is found where every other dead letter is.
      if (!job || ours.has(error)) return;
      const handle = bullmqJobHandle(job as Job, undefined, queueName);
      const why = (job as Job).failedReason ?? '';
      const filing = succeeded.has(job)
        ? endedUncompleted(runtime, handle, error, why)
        : endedUnprocessed(runtime, handle, why);
      this.#filing.add(filing);
      void filing.finally(() => this.#filing.delete(filing));
    });
    // Registered so that tools list the queue without scanning BullMQ's keys; a refusal is reported only.
    this.#registered = Promise.resolve()
      .then(() => this.deadLetters?.registerQueue(queueName))
      .catch((error: unknown) => this.#report(error));
    if (workerOptions.autorun !== false)
      this.run().catch((error: unknown) => this.emit('error', asError(error)));
    this.#autoReplay?.start();
  }

  /** Brings a released parked job back to wait (BullMQ's `promote`), if it is still delayed. */
  async #promote(jobId: string): Promise<PromoteResult> {
    const job = await Job.fromId(this as never, jobId);
    if (!job) return 'gone';
    try {
      await job.promote();
      return 'promoted';
    } catch {
      // Not delayed: still being parked (active), or back already and no longer ours to move.
      return (await job.getState()) === 'active' ? 'busy' : 'gone';
    }
  }

  /** BullMQ's fetch of the next job, behind the run loop's backoff (see `run-loop-errors.ts`). */
  protected override moveToActive(
    ...args: Parameters<Worker<Data, Result, Name>['moveToActive']>
  ): ReturnType<Worker<Data, Result, Name>['moveToActive']> {
    return this.#runLoop.fetch(() => super.moveToActive(...args)) as ReturnType<
      Worker<Data, Result, Name>['moveToActive']
    >;
  }

  /**
   * BullMQ's completion of a job whose processor succeeded. On BullMQ's PostgreSQL backend the completion's
   * transaction can lose a deadlock (SQLSTATE 40P01) against another worker's: the server rolls it back,
   * and BullMQ would fail the job whose work is done (into its failed set, the result gone). The job is
   * still active under this worker's lock, so the completion is written again (see `#againOnConflict`).
   */
  protected override handleCompleted(
    ...args: Parameters<Worker<Data, Result, Name>['handleCompleted']>
  ): ReturnType<Worker<Data, Result, Name>['handleCompleted']> {
    return this.#againOnConflict('completion', () => super.handleCompleted(...args));
  }

  /**
   * BullMQ's end of a failed attempt: the move to failed, or the fetch after a `DelayedError`. A move to
   * failed that loses a deadlock would leave the job active until its lock runs out and the stalled-job
   * check brings it back (a stall counted against it): it is written again instead.
   */
  protected override handleFailed(
    ...args: Parameters<Worker<Data, Result, Name>['handleFailed']>
  ): ReturnType<Worker<Data, Result, Name>['handleFailed']> {
    const [error, job] = args;
    // After BullMQ's control errors (a retry's DelayedError, a rate limit) the only write is the fetch
    // of the next job, which the run loop already tries again (`moveToActive`): not twice over here.
    if (isNamed(error, BULLMQ_CONTROL_ERRORS)) return super.handleFailed(...args);
    // A move to failed adds the error's stack to the job before it writes: each try starts from the
    // stacks the job had, so a job written again keeps one copy.
    const stacktrace = [...(job.stacktrace ?? [])];
    return this.#againOnConflict('failure', () => {
      job.stacktrace = [...stacktrace];
      return super.handleFailed(...args);
    });
  }

  /**
   * Runs `write` (BullMQ's end of a job, one transaction on PostgreSQL) and, on BullMQ 6's PostgreSQL
   * backend, runs it again when the server rolled it back for a deadlock or a serialization failure, up to
   * {@link COMPLETION_TRIES} times; the last conflict goes to BullMQ as before.
   */
  async #againOnConflict<T>(what: 'completion' | 'failure', write: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries++) {
      try {
        return await write();
      } catch (error) {
        if (!this.#retriesConflicts || !isTransactionRollback(error)) throw error;
        const again = tries < COMPLETION_TRIES;
        this.#conflicted(what, error, again);
        if (!again) throw error;
        // The other transaction holds its locks until it commits: a short, growing pause lets it.
        await new Promise((resolve) => setTimeout(resolve, tries * tries * 5 * (1 + this.#random())));
      }
    }
  }

  /** Tells the `write-conflict` event of a write the server rolled back. */
  #conflicted(write: WorkerEvents['write-conflict']['write'], error: unknown, again: boolean): void {
    const code = transactionRollbackState(error) ?? 'unknown';
    this.events.emit('write-conflict', { queue: this.name, write, code, again });
  }

  /** Every 'error' event meets the run loop first: an error no retry can fix is reported once, as one clear error. */
  override emit<U extends keyof WorkerListener<Data, Result, Name>>(
    event: U,
    ...args: Parameters<WorkerListener<Data, Result, Name>[U]>
  ): boolean {
    // BullMQ may emit while its constructor runs, before the field exists.
    if (event === 'error' && #runLoop in this && this.#runLoop.absorbs(args[0])) return true;
    return super.emit(event, ...args);
  }

  /** Reports the one clear error (BullMQ prints it when nobody listens) and closes the worker. */
  #closeOnFatal(error: Error): void {
    super.emit('error', error);
    this.close().catch((closeError: unknown) => this.#report(closeError));
  }

  /** BullMQ's 'error' event when someone listens (emitting it unheard would throw), a process warning otherwise. */
  #report(error: unknown): void {
    if (this.listenerCount('error') > 0) this.emit('error', asError(error));
    else process.emitWarning(asError(error), 'StormguardWarning');
  }

  /**
   * BullMQ's pause: no more jobs are taken, and (unless `doNotWaitActive`) the jobs in flight finish first.
   * A job still waiting for a limit's slot before it starts is put back unrun at once, so it does not keep
   * the pause waiting for up to `limitsOptions.maxStartWaitMs`.
   */
  override pause(doNotWaitActive?: boolean): Promise<void> {
    // BullMQ marks the worker paused before it waits: no job fetched after this waits for a slot either.
    const pausing = super.pause(doNotWaitActive);
    this.limits?.holdWaits();
    return pausing;
  }

  /** BullMQ's resume: jobs are taken again, and wait for a limit's slot as before the pause. */
  override resume(): Promise<void> {
    this.limits?.holdWaits(false);
    return super.resume();
  }

  /**
   * Graceful shutdown: stops taking jobs, lets in-flight jobs finish (BullMQ's `close`; `force` skips the
   * wait), then flushes the budget's and the breaker's batched successes. The stores given in the options
   * stay open: their owner closes them. Safe to call twice.
   */
  override close(force = false): Promise<void> {
    this.#closed ??= (async () => {
      try {
        await this.#autoReplay?.stop();
        await this.#replayQueue?.close();
        await this.flow?.stop();
        // Jobs waiting for a limit's slot before they start are held now, not at the end of their wait.
        this.limits?.holdWaits();
        await super.close(force);
      } finally {
        // Successes already counted must reach the store even when BullMQ's close fails.
        await this.#budget?.flush();
        await this.#breaker?.flush?.();
        // The jobs have ended: their slots' give-backs go out, then the store limits opened closes.
        await this.limits?.stop();
        await Promise.all([this.#registered, ...this.#filing]);
        await this.#closeOwn();
        await this.#closeLimitStore();
      }
    })();
    return this.#closed;
  }
}

/**
 * Creates a BullMQ worker for `queueName` whose jobs run under stormguard's retry control. The processor
 * gets `(job, ctx)`; `ctx.call(dependency, fn)` runs one downstream call: it consults the breaker, records
 * a success for the dependency (batched in memory) or charges the failure to it. A failure thrown outside
 * `ctx.call` is charged to `dependencies[job.name]`, or to the job name when it has no mapping.
 *
 * On a failed attempt `decide` rules: a retry is `job.moveToDelayed` and a `DelayedError` (BullMQ's own
 * `attempts` and `backoff` are never used: BullMQ sees no failure it could retry); a dead-letter files the
 * full record in the dead-letter store, then fails the BullMQ job with an `UnrecoverableError`.
 *
 * Defaults: no budget, no breaker, system clock and `Math.random`, concurrency 1, `process.emitWarning`
 * for warnings. The worker starts at once unless `workerOptions.autorun` is false.
 *
 * @example
 * const worker = createWorker('index', async (job, ctx) => {
 *   await ctx.call('search', () => search.index(job.data.docId));
 * }, { connection, policy: presets.idempotentInternal, deadLetters, budget, dependencies: { reindex: 'search' } });
 * worker.events.on('dead-letter', (e) => log.warn(`${e.task} dead-lettered: ${e.reason}`));
 * process.on('SIGTERM', () => worker.close());
 *
 * @example
 * // BullMQ 6 on PostgreSQL: no Redis at all. `migrate: true` lets BullMQ create its tables (or run its
 * // migrations first); without either, the worker closes with an error saying so.
 * import { createPostgresBackend } from 'bullmq';
 * createWorker('index', processor, {
 *   connection: { connectionString: process.env.DATABASE_URL, migrate: true },
 *   backend: createPostgresBackend,
 *   policy: 'idempotent-internal',
 *   deadLetters: new PostgresDeadLetterStore({ connection: pool }),
 * });
 */
export function createWorker<Data = unknown, Result = unknown, Name extends string = string>(
  queueName: string,
  processor: StormguardProcessor<Data, Result, Name>,
  options: StormguardWorkerOptions<Data, Result, Name>,
): StormguardWorker<Data, Result, Name> {
  return new StormguardWorker(queueName, processor, options);
}

/**
 * Ends the processor the way BullMQ understands the runtime's outcome: a result, a `DelayedError` for a job
 * already moved to delayed, an `UnrecoverableError` (which BullMQ never retries, whatever the job's
 * `attempts`) for a terminal decision, or the processor's own BullMQ control error.
 */
function settleInBullMQ<Result>(
  job: Job,
  outcome: RunOutcome<Result>,
  queue: string,
  ours: WeakSet<Error>,
): Result {
  const unrecoverable = (message: string) => {
    const error = new UnrecoverableError(message);
    ours.add(error);
    return error;
  };
  switch (outcome.type) {
    case 'completed':
      return outcome.value;
    case 'delayed':
      throw new DelayedError();
    case 'pass-through':
      throw outcome.error;
    case 'failed':
      throw unrecoverable(outcome.message);
    case 'paused':
      throw new DelayedError();
    case 'dead-lettered':
      if (parentWouldWaitForever(job)) {
        const marker: DeadLetteredMarker = {
          stormguard: 'dead-lettered',
          reason: outcome.reason,
          queue,
          recordId: outcome.recordId,
          jobId: job.id ?? '',
        };
        return marker as Result;
      }
      throw unrecoverable(outcome.message);
  }
}

/**
 * Files the dead letter of a job BullMQ failed on its own. Its failed reason says why: `child <key> failed`
 * for the parent of a failed `failParentOnFailure` child (its own work is not wrong, so `permanent` with
 * classification `child-failed`: the child's own dead letter says what failed), anything else for a limit
 * BullMQ enforces (`maxStartedAttempts`).
 */
function endedUnprocessed(runtime: JobRuntime, handle: JobHandle, why: string): Promise<void> {
  if (why.startsWith('child '))
    return runtime.deadLetterEnded(
      handle,
      Object.assign(new Error(why), { name: 'ChildJobFailedError' }),
      'permanent',
      `${why} and the job was added with failParentOnFailure: the child's own dead letter says why`,
      { retryable: false, reason: 'child-failed' },
    );
  return runtime.deadLetterEnded(
    handle,
    Object.assign(new Error(why), { name: 'UnprocessedJobError' }),
    'max-attempts',
    `BullMQ failed it without running it: ${why}`,
    {
      retryable: false,
      reason: 'unprocessed',
    },
  );
}

/**
 * Files the dead letter of a job whose processor succeeded but whose completion BullMQ could not write
 * (on its PostgreSQL backend, a deadlock that outlasted every try): BullMQ failed it instead. Its work is
 * done and its result is gone, so the record says so: a replay runs the processor again.
 */
function endedUncompleted(runtime: JobRuntime, handle: JobHandle, error: Error, why: string): Promise<void> {
  return runtime.deadLetterEnded(
    handle,
    error,
    'permanent',
    `the processor succeeded but BullMQ could not record the job's completion (${why}) and failed it: its work is done and its result was not kept; a replay runs the processor again`,
    { retryable: false, reason: 'completion-failed' },
  );
}

/** True for a budget or breaker that can be read (`RetryBudget`, `CircuitBreaker`): what auto replay waits on. */
function hasState<T>(value: T): value is T & { state(dependency: string): Promise<never> } {
  return typeof (value as { state?: unknown } | undefined)?.state === 'function';
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

function warnOnAttemptsMismatch(
  job: Job,
  queue: string,
  policy: RetryPolicy,
  warned: Set<string>,
  warn: (message: string) => void,
): void {
  const attempts = job.opts.attempts;
  if (attempts === undefined || attempts <= 1 || attempts === policy.maxAttempts) return;
  if (warned.has(job.name)) return;
  warned.add(job.name);
  warn(
    `queue "${queue}": job "${job.name}" was added with BullMQ attempts: ${attempts}, but policy "${policy.name}" allows ${policy.maxAttempts}; stormguard's policy decides and BullMQ's attempts and backoff are ignored (add jobs without attempts, or make them match)`,
  );
}

function checkOptions<D, R, N extends string>(
  queueName: string,
  processor: unknown,
  options: StormguardWorkerOptions<D, R, N>,
): void {
  if (typeof queueName !== 'string' || queueName === '' || queueName.includes(':'))
    throw new InvalidInputError(
      `createWorker: queue name must be a non-empty string without ':', got ${JSON.stringify(queueName)}`,
    );
  if (typeof processor !== 'function')
    throw new InvalidInputError(
      'createWorker: the processor must be a function (job, ctx) => Promise<result>',
    );
  // A typo'd or misplaced option is named first: a misspelt `connection` then reads as that, not as missing.
  if (options && typeof options === 'object') checkWorkerOptionNames(options);
  if (!options || typeof options !== 'object' || !options.connection)
    throw new InvalidInputError(
      'createWorker: options.connection is required (ioredis options or instance, or the backend connection)',
    );
  // On a Redis Cluster a prefix without a hash tag fails every BullMQ script with CROSSSLOT: refuse it now.
  if ((options.connection as { isCluster?: unknown }).isCluster === true && options.backend === undefined) {
    const problem = clusterPrefixProblem(options.workerOptions?.prefix ?? BULLMQ_DEFAULT_PREFIX, queueName);
    if (problem) throw new InvalidInputError(`createWorker: ${problem}`);
  }
  checkStores(options);
  for (const [name, dependency] of Object.entries(options.dependencies ?? {})) {
    const problem = dependencyNameProblem(dependency);
    if (problem)
      throw new InvalidInputError(
        `createWorker: dependencies.${name} ${problem}; name the downstream system, e.g. "search" (got ${JSON.stringify(dependency)})`,
      );
  }
  if (
    options.concurrency !== undefined &&
    !(Number.isInteger(options.concurrency) && options.concurrency >= 1)
  )
    throw new InvalidInputError(
      `createWorker: concurrency must be an integer >= 1, got ${options.concurrency}`,
    );
  const maxStalls = options.workerOptions?.maxStalledCount;
  if (maxStalls !== undefined && !(Number.isInteger(maxStalls) && maxStalls >= 0))
    throw new InvalidInputError(
      `createWorker: workerOptions.maxStalledCount must be an integer >= 0, got ${maxStalls}`,
    );
  if (options.flowControl) {
    const breaker = options.breaker as Partial<FlowBreaker> | undefined;
    if (!breaker || typeof breaker.state !== 'function' || typeof breaker.optionsFor !== 'function')
      throw new InvalidInputError(
        'createWorker: flowControl needs a breaker (a CircuitBreaker on a shared store): flow control holds jobs while the breaker says their dependency is down',
      );
  }
  if (options.budget && typeof options.budget.recordSuccess !== 'function')
    throw new InvalidInputError(
      'createWorker: budget must be a RetryBudget (trySpend, recordSuccess, flush)',
    );
  checkWorkerLimits('createWorker', options, hasDefaultLimitStore(options.connection, options.backend));
  if (options.idempotency && typeof options.idempotency.key !== 'function')
    throw new InvalidInputError(
      'createWorker: idempotency.key must be a function (job) => string | undefined',
    );
}

function checkStores<D, R, N extends string>(options: StormguardWorkerOptions<D, R, N>): void {
  const { deadLetters, attemptState } = options;
  if (options.autoReplay) {
    if (deadLetters === false)
      throw new InvalidInputError(
        'createWorker: autoReplay replays dead letters, so it needs a dead-letter store (deadLetters is false)',
      );
    checkAutoReplayOptions(options.autoReplay, hasState(options.budget) || hasState(options.breaker));
  }
  if (deadLetters === false) {
    if (!isStore(attemptState, ['readAttempts', 'writeAttempts', 'clearAttempts']))
      throw new InvalidInputError(
        'createWorker: with deadLetters: false, give attemptState (an AttemptStateStore, e.g. a dead-letter store) to keep attempt counts between attempts',
      );
    return;
  }
  if (deadLetters === undefined) {
    if (options.backend !== undefined)
      throw new InvalidInputError(
        'createWorker: with a backend, give deadLetters (a PostgresDeadLetterStore for BullMQ on PostgreSQL): the default dead-letter store is Redis, on the worker connection',
      );
    return;
  }
  if (!isStore(deadLetters, ['file', 'registerQueue', 'readAttempts', 'writeAttempts', 'clearAttempts']))
    throw new InvalidInputError(
      'createWorker: options.deadLetters must be a DeadLetterStore (MemoryDeadLetterStore, RedisDeadLetterStore, PostgresDeadLetterStore), or false to file nowhere',
    );
}

function isStore(value: unknown, methods: readonly string[]): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function')
  );
}

/** An idempotency key must outlive every retry: the guard keeps outcomes at least the policy's max age. */
function checkKeyLifetime(policy: RetryPolicy, guardTtlMs: number | undefined): void {
  if (guardTtlMs === undefined || policy.maxAgeMs === undefined || guardTtlMs >= policy.maxAgeMs) return;
  throw new InvalidInputError(
    `createWorker: the idempotency guard keeps outcomes for ${formatDuration(guardTtlMs)} (ttlMs) but policy "${policy.name}" retries for up to ${formatDuration(policy.maxAgeMs)} (maxAge); give the guard ttlMs >= ${policy.maxAgeMs} or lower the policy's maxAge, so a late retry cannot repeat the side effect`,
  );
}

function isNamed(error: unknown, names: ReadonlySet<string>): boolean {
  return (
    typeof error === 'object' && error !== null && names.has((error as { name?: unknown }).name as string)
  );
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
