import type { WorkerOptions as BullWorkerOptions, ConnectionOptions, Job } from 'bullmq';
import type { Clock } from '../common/clock.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import type { RandomSource } from '../common/random.js';
import type { RetryPolicy } from '../policy/types.js';
import type { AttemptStateStore, DeadLetterStore } from '../runtime/contracts.js';
import type { FlowControlOptions } from '../runtime/flow-control/options.js';
import type { JobInstrumentation } from '../runtime/instrumentation.js';
import type { RuntimeBreaker, RuntimeBudget, RuntimeGuard } from '../runtime/job-runtime.js';
import type { LimitsByDependency, LimitsOptions } from '../runtime/limits/options.js';
import type { BookkeepingBackoff } from '../runtime/pending-outcome.js';
import type { AutoReplayOptions } from '../runtime/replay/auto-replay.js';

/**
 * The retry budget as a worker uses it: `trySpend` (through `decide`) on the failure path, and
 * `recordSuccess` on the success path, which must be synchronous and batched (no round trip per job).
 * `flush` sends the batched successes; the worker calls it when it closes. `RetryBudget` is one.
 *
 * @example
 * const budget: WorkerBudget = new RetryBudget({ store: new RedisBudgetStore({ redis }) });
 */
export type WorkerBudget = RuntimeBudget;

/**
 * The circuit breaker as a worker uses it: `check` in `decide`, `execute` around each `ctx.call`, and
 * `flush` (when it has one) at `close()` to send batched successes. `CircuitBreaker` is one.
 *
 * @example
 * const breaker: WorkerBreaker = new CircuitBreaker({ consecutiveFailures: 5 });
 */
export type WorkerBreaker = RuntimeBreaker;

/**
 * BullMQ 6's backend factory (`createPostgresBackend`), passed to its `Worker` as it is. Typed loosely so
 * that stormguard's types compile against BullMQ 5, which has no backends.
 *
 * @example
 * import { createPostgresBackend } from 'bullmq';
 * const backend: QueueBackendFactory = createPostgresBackend;
 */
// biome-ignore lint/suspicious/noExplicitAny: BullMQ 6's BackendFactory, which BullMQ 5 does not declare.
export type QueueBackendFactory = (...args: any[]) => unknown;

/**
 * What the worker connects with: ioredis options or an instance (the Redis backend), or whatever the given
 * `backend` takes (for BullMQ 6's PostgreSQL backend: a connection string, pool options or a `pg.Pool`).
 *
 * @example
 * const onRedis: WorkerConnection = { host: '127.0.0.1', port: 6379 };
 * const onPostgres: WorkerConnection = { connectionString: process.env.DATABASE_URL };
 */
export type WorkerConnection = ConnectionOptions | string | { readonly [option: string]: unknown };

/**
 * Options of `createWorker`. `connection` and `policy` are required; the defaults are listed on each.
 *
 * @example
 * const options: StormguardWorkerOptions<{ docId: string }> = {
 *   connection: { host: '127.0.0.1', port: 6379 },
 *   policy: 'idempotent-internal',
 *   deadLetters: new RedisDeadLetterStore({ redis }),
 *   budget,
 *   dependencies: { reindex: 'search' },
 *   idempotency: { guard, key: (job) => `index:${job.data.docId}` },
 * };
 */
export interface StormguardWorkerOptions<Data = unknown, Result = unknown, Name extends string = string> {
  /**
   * BullMQ connection: ioredis options or instance (give a shared instance `maxRetriesPerRequest: null`),
   * or the `backend`'s connection (BullMQ 6 on PostgreSQL: a connection string or pool options).
   */
  connection: WorkerConnection;
  /**
   * BullMQ 6's backend factory, for a queue that is not on Redis: `createPostgresBackend` from `bullmq`.
   * Default: BullMQ's own (Redis). BullMQ 5 has no backends: leave it out there.
   */
  backend?: QueueBackendFactory;
  /** The retry policy: one built with `definePolicy`, a preset object, or a preset name. */
  policy: RetryPolicy | string;
  /**
   * Where dead-lettered jobs are filed, and (unless `attemptState` says otherwise) where attempt states
   * live: a `DeadLetterStore` (memory, Redis or PostgreSQL). `false` files nowhere: terminal decisions
   * become `fail` and the job ends in BullMQ's failed set; `attemptState` is then required.
   * Default: a `RedisDeadLetterStore` (prefix `stormguard`) on the worker's Redis `connection`; with a
   * `backend` there is no default (give a `PostgresDeadLetterStore` for BullMQ on PostgreSQL).
   */
  deadLetters?: DeadLetterStore | false;
  /** Where attempt states live between attempts. Default: the `deadLetters` store. */
  attemptState?: AttemptStateStore;
  /** The fleet-wide retry budget. Default: none (only the policy's ceiling limits retries). */
  budget?: WorkerBudget;
  /** The circuit breaker. Default: none. */
  breaker?: WorkerBreaker;
  /**
   * Flow control (needs `breaker`): while a dependency's breaker is open the worker stops taking its jobs
   * (the whole queue paused when `queueDependency` names it, its jobs parked otherwise), and after the
   * recovery the attempts it admits ramp up over `slowStartMs`, fleet-wide. See docs/flow-control.md.
   * Default: off.
   */
  flowControl?: FlowControlOptions;
  /**
   * Fleet-wide limits per dependency: `{ openai: { maxInFlight: 25, maxRatePerSecond: 50 } }`. Each
   * `ctx.call` to a limited dependency takes a slot before it runs and gives it back after; a job whose
   * dependency is known up front (`dependencies`, its name) takes its slot before it starts. Over a limit,
   * a call waits up to `limitsOptions.maxPaceWaitMs`, then the job is held without using an attempt (the
   * queue paused when the dependency is the queue's, the job delayed otherwise), never dead-lettered for
   * waiting; a job of the queue's own dependency at the in-flight cap waits before it starts up to
   * `limitsOptions.maxStartWaitMs`. Needs neither flow control nor a breaker. See docs/limits.md.
   * Default: none.
   */
  limits?: LimitsByDependency;
  /**
   * How limits are enforced: the store (default `flowControl.store`, else a `RedisFlowStore` on the
   * worker's Redis `connection`, or a `PostgresFlowStore` on BullMQ 6's PostgreSQL backend), `stateCacheMs`
   * (250), `maxPaceWaitMs` (1 000), `maxStartWaitMs` (30 000), and the ramp after a Retry-After hold (`slowStartMs` 30 000,
   * `floorPerSecond` 1). With flow control, a worker also follows operators' pauses and overrides
   * (`stormguard limits`) of any dependency it calls, through flow control's store.
   */
  limitsOptions?: LimitsOptions;
  /**
   * Automatic replay (needs `deadLetters`, and a `budget` or a `breaker` to tell health by): the worker
   * puts the queue's budget-exhausted and breaker-open dead letters back once their dependency is healthy
   * (budget not denying, breaker not open), paced at `ratePerSecond` for the whole fleet, as replay runs
   * in `runs` that one worker at a time holds, so no record is replayed twice however many workers run.
   * The replayed jobs' attempts go through flow control's slow start like any other. See
   * docs/dead-letters.md. Default: off (replay with `stormguard dlq replay`, or the console).
   */
  autoReplay?: AutoReplayOptions;
  /**
   * Job name → dependency, for failures thrown outside `ctx.call` and jobs that make no `ctx.call`.
   * A job name with no entry is its own dependency. Default: `{}`.
   */
  dependencies?: Readonly<Record<string, string>>;
  /**
   * Runs each job that has a key through the guard's `once`, so a retry or a replay of work that already
   * finished returns the stored outcome instead of repeating it; and tells the policy the job has a key
   * (a `key-required` policy retries only then). A guard that says how long it keeps outcomes (`ttlMs`, as
   * `IdempotencyGuard` does) must keep them at least the policy's `maxAge`, or `createWorker` throws: a key
   * that expires before the last retry lets that retry repeat the side effect. Default: none.
   */
  idempotency?: {
    guard: RuntimeGuard & { readonly ttlMs?: number };
    key: (job: Job<Data, Result, Name>) => string | undefined;
  };
  /**
   * The one clock of the worker: "now" for `decide` (max age, first failure, dead-letter time) and the due
   * time of every retry. BullMQ turns a due time into a delay with its own `Date.now()`, so a clock that
   * runs apart from the system's shifts every retry by the difference. Default: the system clock.
   */
  clock?: Clock;
  /** The random source for jitter. Default: `Math.random`. */
  random?: RandomSource;
  /** Jobs processed at once by this worker. Default: 1 (BullMQ's default). */
  concurrency?: number;
  /**
   * Any other BullMQ worker options (lockDuration, stalledInterval, limiter, prefix…), passed to BullMQ as
   * they are, except `maxStalledCount` (default 1): stormguard enforces it itself, so that a job past it is
   * dead-lettered rather than failed by BullMQ without reaching the dead-letter store.
   */
  workerOptions?: Partial<Omit<BullWorkerOptions, 'connection' | 'concurrency'>>;
  /**
   * Told about configuration that works but is probably not what was meant (a job added with BullMQ
   * `attempts` different from the policy's `maxAttempts`), once per job name. Default: `process.emitWarning`.
   */
  onWarning?: (message: string) => void;
  /**
   * Follows every attempt for a tracer: `openTelemetryTracing()` from `stormguard/opentelemetry` gives a
   * span per attempt's decision and per `ctx.call`. Default: none (nothing is traced, nothing is paid).
   */
  instrumentation?: JobInstrumentation;
  /**
   * How a write a store refused after the processor ran (a dead letter, a retry's attempt state) is tried
   * again: the outcome waits in the job's own record (its progress) and is written at the job's next run,
   * without running the processor. Default `{ firstDelayMs: 5_000, maxDelayMs: 300_000 }` (5 s doubling to
   * 5 minutes), until the policy's `maxAge`.
   */
  bookkeepingBackoff?: BookkeepingBackoff;
}

/** Every option `createWorker` takes, kept complete by the compiler. */
const WORKER_OPTION_NAMES = {
  connection: true,
  backend: true,
  policy: true,
  deadLetters: true,
  attemptState: true,
  budget: true,
  breaker: true,
  flowControl: true,
  limits: true,
  limitsOptions: true,
  autoReplay: true,
  dependencies: true,
  idempotency: true,
  clock: true,
  random: true,
  concurrency: true,
  workerOptions: true,
  onWarning: true,
  instrumentation: true,
  bookkeepingBackoff: true,
} as const satisfies OptionNames<StormguardWorkerOptions>;

/** BullMQ's own worker options: given beside stormguard's, they belong in `workerOptions`. */
const BULLMQ_WORKER_OPTIONS = [
  'prefix',
  'name',
  'autorun',
  'limiter',
  'lockDuration',
  'lockRenewTime',
  'stalledInterval',
  'maxStalledCount',
  'maxStartedAttempts',
  'maximumRateLimitDelay',
  'drainDelay',
  'removeOnComplete',
  'removeOnFail',
  'runRetryDelay',
  'settings',
  'metrics',
  'telemetry',
  'skipLockRenewal',
  'skipStalledCheck',
  'skipVersionCheck',
  'useWorkerThreads',
  'blockingConnection',
] as const;

/** Names people reach for that stormguard spells otherwise. */
const WORKER_OPTION_ALIASES: Readonly<Record<string, string>> = {
  store: 'the dead-letter store is `deadLetters`',
  deadLetterStore: 'the dead-letter store is `deadLetters`',
  redis: 'the Redis client or options go in `connection`',
  attempts: "attempts come from the policy (`policy`'s maxAttempts)",
  backoff: "the delays come from the policy (`policy`'s backoff)",
};

/**
 * Refuses an option `createWorker` does not take, naming where it belongs: BullMQ's own worker options
 * (`prefix`, `lockDuration`, …) go in `workerOptions`, a typo gets the option it is closest to. Ignored, a
 * misplaced `prefix` would put the worker on BullMQ's default prefix without a word.
 *
 * @example
 * checkWorkerOptionNames({ connection, policy: 'email', prefix: '{bull}' });
 * // InvalidInputError: createWorker: unknown option "prefix": it is a BullMQ worker option: give it in workerOptions, e.g. { workerOptions: { prefix: "{bull}" } }
 */
export function checkWorkerOptionNames(options: object): void {
  const elsewhere: Record<string, string> = { ...WORKER_OPTION_ALIASES };
  for (const name of BULLMQ_WORKER_OPTIONS) {
    const value = (options as Record<string, unknown>)[name];
    const shown = typeof value === 'string' || typeof value === 'number' ? JSON.stringify(value) : '…';
    elsewhere[name] =
      `it is a BullMQ worker option: give it in workerOptions, e.g. { workerOptions: { ${name}: ${shown} } }`;
  }
  checkOptionNames('createWorker', options, WORKER_OPTION_NAMES, elsewhere);
}
