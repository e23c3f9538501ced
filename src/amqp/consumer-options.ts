import type { Options } from 'amqplib';
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
import type { AmqpJob } from './amqp-job.js';
import type { AmqpConnection, ReconnectOptions } from './connection.js';

/**
 * What `createConsumer` takes: the same retry governance as `createWorker`, on a RabbitMQ queue.
 *
 * @example
 * const options: AmqpConsumerOptions<{ id: string }> = {
 *   connection: 'amqp://guest:guest@127.0.0.1:5672/orders',
 *   policy: 'idempotent-internal',
 *   deadLetters: new RedisDeadLetterStore({ redis }),
 *   concurrency: 10,
 * };
 */
export interface AmqpConsumerOptions<Data = unknown> {
  /**
   * An AMQP URL or amqplib connect options (the consumer connects, and reconnects when the connection
   * drops), or an open amqplib connection (used as it is; the consumer cannot reopen it).
   */
  connection: AmqpConnection;
  /** The retry policy: one built with `definePolicy`, a preset object, or a preset name. */
  policy: RetryPolicy | string;
  /**
   * Where dead letters are filed, and (unless `attemptState` says otherwise) where attempt states live: a
   * `DeadLetterStore` (memory, Redis or PostgreSQL). Required: RabbitMQ has no store stormguard could
   * default to. `false` files nowhere: a terminal decision moves the message to the queue's failed queue
   * (`<queue>.stormguard-failed`), and `attemptState` is then required.
   */
  deadLetters: DeadLetterStore | false;
  /** Where attempt states live between attempts. Default: the `deadLetters` store. */
  attemptState?: AttemptStateStore;
  /** The fleet-wide retry budget. Default: none. */
  budget?: RuntimeBudget;
  /** The circuit breaker. Default: none. */
  breaker?: RuntimeBreaker;
  /**
   * Flow control (needs `breaker`): while a dependency's breaker is open the consumer stops consuming
   * (`basic.cancel`, when `queueDependency` names it) or parks its messages in a delay bucket, and after
   * the recovery the attempts it admits ramp up over `slowStartMs`, fleet-wide. A parked message comes
   * back by itself after `parkHorizonMs` (default here 5 000: a delay bucket cannot be emptied early) and
   * meets the gate again.
   */
  flowControl?: FlowControlOptions;
  /**
   * Fleet-wide limits per dependency, as `createWorker`'s: `{ openai: { maxInFlight: 25 } }`. A message
   * over a limit waits up to `limitsOptions.maxPaceWaitMs` (`maxStartWaitMs` before it starts, for the
   * queue's own dependency at the in-flight cap), then is held without using an attempt: the consumer
   * stops consuming for a while (the queue's own dependency) or the message waits in a delay bucket. See
   * docs/limits.md. Default: none.
   */
  limits?: LimitsByDependency;
  /**
   * How limits are enforced. `store` is required with `limits` unless flow control is set (its store is
   * the default): RabbitMQ has no store stormguard could open. With flow control, the consumer also follows
   * operators' pauses and overrides (`stormguard limits`) of any dependency it calls.
   */
  limitsOptions?: LimitsOptions;
  /**
   * Job name → dependency. A message's job name is its `type` property, or the queue's name when it has
   * none; a name with no entry is its own dependency. Default `{}`.
   */
  dependencies?: Readonly<Record<string, string>>;
  /** Runs each message that has a key through the guard's `once` (see `createWorker`). Default: none. */
  idempotency?: {
    guard: RuntimeGuard & { readonly ttlMs?: number };
    key: (job: AmqpJob<Data>) => string | undefined;
  };
  /** The one clock: decisions and the due time of every retry. Default: the system clock. */
  clock?: Clock;
  /** The random source for jitter (and reconnect backoff). Default: `Math.random`. */
  random?: RandomSource;
  /** Messages processed at once: the channel's prefetch. Default 1. */
  concurrency?: number;
  /**
   * Deliveries of one message that may end with no outcome (its consumer or connection died) before it is
   * dead-lettered unprocessed, as `maxStalledCount` does for BullMQ: a poison message that kills its
   * consumer is never redelivered for ever. Default 1.
   */
  maxRedeliveries?: number;
  /**
   * The queue is declared when it does not exist: durable, quorum, with these arguments added. `false`:
   * never declare (a missing queue is an error). Default `{}`.
   */
  declareQueue?: Options.AssertQueue | false;
  /** Reconnection after a dropped connection (a URL or options connection only). */
  reconnect?: ReconnectOptions;
  /** Follows every attempt for a tracer (`openTelemetryTracing()`). Default: none. */
  instrumentation?: JobInstrumentation;
  /**
   * How a write a store refused after the processor ran is tried again: the outcome travels in the
   * message's headers, and is written at its next delivery without running the processor. Default 5 s
   * doubling to 5 minutes, until the policy's `maxAge`.
   */
  bookkeepingBackoff?: BookkeepingBackoff;
}

const CONSUMER_OPTION_NAMES = {
  connection: true,
  policy: true,
  deadLetters: true,
  attemptState: true,
  budget: true,
  breaker: true,
  flowControl: true,
  limits: true,
  limitsOptions: true,
  dependencies: true,
  idempotency: true,
  clock: true,
  random: true,
  concurrency: true,
  maxRedeliveries: true,
  declareQueue: true,
  reconnect: true,
  instrumentation: true,
  bookkeepingBackoff: true,
} as const satisfies OptionNames<AmqpConsumerOptions>;

/** Refuses an option `createConsumer` does not know (a typo, or a BullMQ-only option), naming the close ones. */
export function checkConsumerOptionNames(options: object): void {
  checkOptionNames('createConsumer', options, CONSUMER_OPTION_NAMES, {
    workerOptions:
      'a BullMQ option: createConsumer takes concurrency, maxRedeliveries and declareQueue itself',
    autoReplay: 'not on RabbitMQ yet: replay with `stormguard dlq replay --amqp URL`',
  });
}
