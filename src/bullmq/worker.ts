import { Worker } from 'bullmq';
// biome-ignore lint/suspicious/noExplicitAny: interim, until the worker uses only the public API
type JobJsonRaw = any;
import { dependencyNameProblem } from '../budget/dependency-name.js';
import { systemClock } from '../common/clock.js';
import { formatDuration } from '../common/duration.js';
import { EventBus } from '../common/events.js';
import { systemRandom } from '../common/random.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { RetryPolicy } from '../policy/types.js';
import { ATTEMPT_STATE_FIELD } from './attempts.js';
import { DeadLetterQueue } from './dead-letter-queue.js';
import type { WorkerEvents } from './types.js';
import type { StormguardWorkerOptions, WorkerBreaker, WorkerBudget } from './worker-options.js';
import { resolveWorkerPolicy } from './worker-policy.js';
import { JobRunner, type StormguardProcessor } from './worker-runner.js';

/**
 * A BullMQ `Worker` (it is one: every BullMQ method and event works) whose processor runs under
 * stormguard: `ctx.call` attribution, budget and breaker, `decide` on every failed attempt, dead letters.
 * Build it with {@link createWorker}.
 *
 * @example
 * const worker: StormguardWorker<{ docId: string }> = createWorker('index', processor, { connection, policy: 'email' });
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
  /** The dead-letter queue's name, or `undefined` when dead letters are turned off. */
  readonly deadLetterQueueName: string | undefined;
  readonly #runner: JobRunner<Data, Result, Name>;
  readonly #budget: WorkerBudget | undefined;
  readonly #breaker: WorkerBreaker | undefined;
  #deadLetters: DeadLetterQueue | undefined;
  #closed: Promise<void> | undefined;

  constructor(
    queueName: string,
    processor: StormguardProcessor<Data, Result, Name>,
    options: StormguardWorkerOptions<Data, Result, Name>,
  ) {
    checkOptions(queueName, processor, options);
    const policy = resolveWorkerPolicy(options.policy);
    checkKeyLifetime(policy, options.idempotency?.guard.ttlMs);
    const { connection, concurrency, workerOptions = {} } = options;
    // The processor is bound after super(): BullMQ takes it in its constructor, the runner needs `this`.
    const bound: { runner?: JobRunner<Data, Result, Name> } = {};
    super(queueName, (job, token) => (bound.runner as JobRunner<Data, Result, Name>).run(job, token), {
      ...workerOptions,
      connection,
      ...(concurrency === undefined ? {} : { concurrency }),
      autorun: false,
    });
    this.policy = policy;
    this.#budget = options.budget;
    this.#breaker = options.breaker;
    // A throwing listener (a broken metrics hook) is reported, and never fails a job.
    this.events = new EventBus<WorkerEvents>((error) => this.#report(error));
    const deadLetter = options.deadLetter ?? {};
    this.deadLetterQueueName =
      deadLetter === false ? undefined : (deadLetter.queueName ?? `${queueName}-dlq`);
    const prefix = workerOptions.prefix;
    this.#runner = new JobRunner<Data, Result, Name>({
      queue: queueName,
      processor,
      policy,
      budget: options.budget,
      breaker: options.breaker,
      dependencies: options.dependencies ?? {},
      deadLetters:
        this.deadLetterQueueName === undefined
          ? undefined
          : () => {
              this.#deadLetters ??= new DeadLetterQueue(queueName, {
                connection,
                name: this.deadLetterQueueName,
                ...(prefix === undefined ? {} : { prefix }),
              });
              return this.#deadLetters;
            },
      idempotency: options.idempotency,
      clock: options.clock ?? systemClock,
      random: options.random ?? systemRandom,
      events: this.events,
      warn: options.onWarning ?? ((message) => process.emitWarning(message, 'StormguardWarning')),
      internalError: (error) => this.#report(error),
      // biome-ignore lint/suspicious/noExplicitAny: interim
      locate: (jobId) => ({ client: (this as any).client, key: this.toKey(jobId) }),
    });
    bound.runner = this.#runner;
    if (workerOptions.autorun !== false)
      this.run().catch((error: unknown) => this.emit('error', asError(error)));
  }

  /**
   * Hands the runner the attempt state that came with the job's hash (BullMQ reads the whole hash when it
   * takes a job), so the success path needs no extra Redis round trip to know the attempt number.
   */
  protected override createJob(data: JobJsonRaw, jobId: string) {
    const job = super.createJob(data, jobId);
    const raw = (data as unknown as Record<string, unknown>)[ATTEMPT_STATE_FIELD];
    this.#runner.arrived(job, typeof raw === 'string' ? raw : undefined);
    if (job.deferredFailure) {
      // BullMQ would fail it without calling the processor, bypassing the dead-letter queue.
      this.#runner.condemned(job, job.deferredFailure);
      job.deferredFailure = undefined as unknown as string;
    }
    return job;
  }

  /** BullMQ's 'error' event when someone listens (emitting it unheard would throw), a process warning otherwise. */
  #report(error: unknown): void {
    if (this.listenerCount('error') > 0) this.emit('error', asError(error));
    else process.emitWarning(asError(error), 'StormguardWarning');
  }

  /**
   * Graceful shutdown: stops taking jobs, lets in-flight jobs finish (BullMQ's `close`; `force` skips the
   * wait), then flushes the budget's and the breaker's batched successes and closes the dead-letter
   * queue. Safe to call twice.
   */
  override close(force = false): Promise<void> {
    this.#closed ??= (async () => {
      try {
        await super.close(force);
      } finally {
        // Successes already counted must reach the store even when BullMQ's close fails.
        await this.#budget?.flush();
        await this.#breaker?.flush?.();
        await this.#deadLetters?.close();
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
 * On a failed attempt `decide` rules: a retry is rescheduled with `job.moveToDelayed` (BullMQ's own
 * `attempts` and `backoff` are ignored and never retry behind stormguard's back); a dead-letter files the
 * full record in the dead-letter queue and fails the BullMQ job with an `UnrecoverableError`.
 *
 * Defaults: no budget, no breaker, dead-letter queue `<queueName>-dlq`, system clock and `Math.random`,
 * concurrency 1, `process.emitWarning` for warnings. The worker starts at once unless
 * `workerOptions.autorun` is false.
 *
 * @example
 * const worker = createWorker('index', async (job, ctx) => {
 *   await ctx.call('search', () => search.index(job.data.docId));
 * }, { connection, policy: presets.idempotentInternal, budget, dependencies: { reindex: 'search' } });
 * worker.events.on('dead-letter', (e) => log.warn(`${e.task} dead-lettered: ${e.reason}`));
 * process.on('SIGTERM', () => worker.close());
 */
export function createWorker<Data = unknown, Result = unknown, Name extends string = string>(
  queueName: string,
  processor: StormguardProcessor<Data, Result, Name>,
  options: StormguardWorkerOptions<Data, Result, Name>,
): StormguardWorker<Data, Result, Name> {
  return new StormguardWorker(queueName, processor, options);
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
  if (!options || typeof options !== 'object' || !options.connection)
    throw new InvalidInputError('createWorker: options.connection is required (ioredis options or instance)');
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
  if (options.budget && typeof options.budget.recordSuccess !== 'function')
    throw new InvalidInputError(
      'createWorker: budget must be a RetryBudget (trySpend, recordSuccess, flush)',
    );
  if (options.idempotency && typeof options.idempotency.key !== 'function')
    throw new InvalidInputError(
      'createWorker: idempotency.key must be a function (job) => string | undefined',
    );
}

/** An idempotency key must outlive every retry: the guard keeps outcomes at least the policy's max age. */
function checkKeyLifetime(policy: RetryPolicy, guardTtlMs: number | undefined): void {
  if (guardTtlMs === undefined || policy.maxAgeMs === undefined || guardTtlMs >= policy.maxAgeMs) return;
  throw new InvalidInputError(
    `createWorker: the idempotency guard keeps outcomes for ${formatDuration(guardTtlMs)} (ttlMs) but policy "${policy.name}" retries for up to ${formatDuration(policy.maxAgeMs)} (maxAge); give the guard ttlMs >= ${policy.maxAgeMs} or lower the policy's maxAge, so a late retry cannot repeat the side effect`,
  );
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
