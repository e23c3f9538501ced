import type { WorkerOptions as BullWorkerOptions, ConnectionOptions, Job } from 'bullmq';
import type { CircuitBreaker } from '../breaker/circuit-breaker.js';
import type { Clock } from '../common/clock.js';
import type { RandomSource } from '../common/random.js';
import type { BudgetGate, RetryPolicy } from '../policy/types.js';
import type { IdempotencyGuard } from './idempotency-guard.js';

/**
 * The retry budget as a worker uses it: `trySpend` (through `decide`) on the failure path, and
 * `recordSuccess` on the success path, which must be synchronous and batched (no Redis round trip per
 * job). `flush` sends the batched successes; the worker calls it when it closes. `RetryBudget` is one.
 *
 * @example
 * const budget: WorkerBudget = new RetryBudget({ store: new RedisBudgetStore({ redis }) });
 */
export interface WorkerBudget extends BudgetGate {
  recordSuccess(dependency: string): void;
  flush(): Promise<unknown>;
}

/**
 * The circuit breaker as a worker uses it: `check` in `decide`, `execute` around each `ctx.call`, and
 * `flush` (when it has one) at `close()` to send batched successes. `CircuitBreaker` is one.
 *
 * @example
 * const breaker: WorkerBreaker = new CircuitBreaker({ consecutiveFailures: 5 });
 */
export type WorkerBreaker = Pick<CircuitBreaker, 'check' | 'execute'> &
  Partial<Pick<CircuitBreaker, 'flush'>>;

/**
 * Options of `createWorker`. Only `connection` and `policy` are required; the defaults are listed on each.
 *
 * @example
 * const options: StormguardWorkerOptions<{ docId: string }> = {
 *   connection: { host: '127.0.0.1', port: 6379 },
 *   policy: 'idempotent-internal',
 *   budget,
 *   dependencies: { reindex: 'search' },
 *   idempotency: { guard, key: (job) => `index:${job.data.docId}` },
 * };
 */
export interface StormguardWorkerOptions<Data = unknown, Result = unknown, Name extends string = string> {
  /** BullMQ connection (ioredis options or instance). Give a shared instance `maxRetriesPerRequest: null`. */
  connection: ConnectionOptions;
  /** The retry policy: one built with `definePolicy`, a preset object, or a preset name. */
  policy: RetryPolicy | string;
  /** The fleet-wide retry budget. Default: none (only the policy's ceiling limits retries). */
  budget?: WorkerBudget;
  /** The circuit breaker. Default: none. */
  breaker?: WorkerBreaker;
  /**
   * Job name → dependency, for failures thrown outside `ctx.call` and jobs that make no `ctx.call`.
   * A job name with no entry is its own dependency. Default: `{}`.
   */
  dependencies?: Readonly<Record<string, string>>;
  /**
   * Where dead-lettered jobs go: `{ queueName }` (default `<queue>-dlq`), or `false` for nowhere, in which
   * case terminal decisions become `fail` and the job ends in BullMQ's failed set. Default: `{}`.
   */
  deadLetter?: { queueName?: string } | false;
  /**
   * Runs each job that has a key through the guard's `once`, so a retry or a replay of work that already
   * finished returns the stored outcome instead of repeating it; and tells the policy the job has a key
   * (a `key-required` policy retries only then). A guard that says how long it keeps outcomes (`ttlMs`, as
   * `IdempotencyGuard` does) must keep them at least the policy's `maxAge`, or `createWorker` throws: a key
   * that expires before the last retry lets that retry repeat the side effect. Default: none.
   */
  idempotency?: {
    guard: Pick<IdempotencyGuard, 'once'> & { readonly ttlMs?: number };
    key: (job: Job<Data, Result, Name>) => string | undefined;
  };
  /** Where `decide` gets "now" (max age, first failure time, dead-letter time). Default: the system clock. */
  clock?: Clock;
  /** The random source for jitter. Default: `Math.random`. */
  random?: RandomSource;
  /** Jobs processed at once by this worker. Default: 1 (BullMQ's default). */
  concurrency?: number;
  /** Any other BullMQ worker options (lockDuration, stalledInterval, limiter, prefix…). */
  workerOptions?: Partial<Omit<BullWorkerOptions, 'connection' | 'concurrency'>>;
  /**
   * Told about configuration that works but is probably not what was meant (a job added with BullMQ
   * `attempts` different from the policy's `maxAttempts`), once per job name. Default: `process.emitWarning`.
   */
  onWarning?: (message: string) => void;
}
