import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import { dependencyNameProblem } from '../budget/dependency-name.js';
import { systemClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { systemRandom } from '../common/random.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { RetryPolicy } from '../policy/types.js';
import type { CallContext } from '../runtime/call-context.js';
import type { DeadLetterStore } from '../runtime/contracts.js';
import { type FlowBreaker, FlowController, flowBudgetOf } from '../runtime/flow-control/controller.js';
import { JobRuntime } from '../runtime/job-runtime.js';
import type { LimitController } from '../runtime/limits/controller.js';
import {
  checkWorkerLimits,
  flowOptionsWithoutRateAlias,
  workerLimitController,
} from '../runtime/limits/worker-limits.js';
import { resolveWorkerPolicy } from '../runtime/resolve-policy.js';
import type { RunOutcome } from '../runtime/run-outcome.js';
import type { WorkerEvents } from '../runtime/worker-events.js';
import { type AmqpJob, producerHeaders, propertiesOf } from './amqp-job.js';
import {
  type AmqpConnection,
  checkConnection,
  isChannelModel,
  openConnection,
  reconnectDelayMs,
} from './connection.js';
import { type AmqpConsumerOptions, checkConsumerOptionNames } from './consumer-options.js';
import { DELAY_EXCHANGE, declareDelayBuckets, nextBucket } from './delay-buckets.js';
import { DeliveryHandle, needsStallCount } from './delivery-handle.js';
import { HEADER, numberHeader } from './headers.js';

/**
 * A stormguard processor for RabbitMQ: the message as an {@link AmqpJob} plus a {@link CallContext}. Return
 * to ack it; throw to fail the attempt (stormguard then decides: retry, dead-letter or fail).
 *
 * @example
 * const processor: AmqpProcessor<{ id: string }> = async (job, ctx) =>
 *   ctx.call('payments', () => payments.charge(job.json().id));
 */
export type AmqpProcessor<Data = unknown, Result = unknown> = (
  job: AmqpJob<Data>,
  ctx: CallContext,
) => Promise<Result>;

/** Where a message goes when a terminal decision has no dead-letter store to file it in: visible, never re-run. */
export function failedQueueOf(queue: string): string {
  return `${queue}.stormguard-failed`;
}

/** The parking horizon on RabbitMQ when none is given: a delay bucket cannot be emptied early. */
const AMQP_PARK_HORIZON_MS = 5_000;

/** One connection's channels and consumer: replaced as a whole after a reconnect. */
interface Session {
  model: ChannelModel;
  consume: Channel;
  publish: ConfirmChannel;
  consumerTag: string | undefined;
  /** A `basic.consume` is on its way: its tag is not known yet. */
  consumePending: boolean;
  failedQueueDeclared: boolean;
  /** Set once the session is given up: the close events its channels and connection still send are ignored. */
  lost: boolean;
}

/**
 * A RabbitMQ consumer whose messages run under stormguard's job runtime, as `createWorker`'s jobs do:
 * `ctx.call` attribution, budget and breaker, `decide` on every failed attempt, dead letters, flow
 * control. Manual acks, and a publisher confirm for every copy it publishes before the delivery is acked:
 *
 * - **retry**: a copy with the job's attempt state headers goes to the delay buckets (see
 *   `delay-buckets.ts`), and comes back to the queue at its due time (at most about 64 ms plus the hops'
 *   latency after it, never before);
 * - **dead letter**: the record is filed in the dead-letter store (the body kept as base64, with its
 *   properties and headers), then the delivery is acked;
 * - **fail** (no store, or one that refused the record for good): the message moves to
 *   `<queue>.stormguard-failed`, with the reason in a header;
 * - **redelivery** (a consumer died mid-message, or its ack was lost with its connection): counted as a
 *   stall; past `maxRedeliveries` the message is dead-lettered unprocessed.
 *
 * The connection is reopened after it drops (backoff with jitter), the queue consumed again and flow
 * control's pauses restored. Build it with {@link createConsumer}.
 *
 * @example
 * const consumer = createConsumer('orders', processor, { connection: url, policy: 'email', deadLetters });
 * await consumer.ready;
 * consumer.events.on('retry', (e) => console.log(`${e.dependency}: retry ${e.retry} in ${e.delayMs} ms`));
 * process.on('SIGTERM', () => consumer.close());
 */
export class AmqpConsumer<Data = unknown, Result = unknown> {
  /** 'attempt', 'success', 'retry', 'dead-letter', 'completed', and flow control's events. */
  readonly events: EventBus<WorkerEvents & { error: Error; connected: { attempt: number } }>;
  /** The resolved retry policy. */
  readonly policy: RetryPolicy;
  /** The dead-letter store, or `undefined` when dead letters are turned off. */
  readonly deadLetters: DeadLetterStore | undefined;
  /** Flow control, when the options ask for it. */
  readonly flow: FlowController | undefined;
  /** Fleet-wide limits, when the options ask for them or flow control brings a store: `status()` for gauges. */
  readonly limits: LimitController | undefined;
  /** Resolves once the consumer is consuming for the first time; rejects if it is closed first. */
  readonly ready: Promise<void>;
  readonly #queue: string;
  readonly #options: AmqpConsumerOptions<Data>;
  readonly #processor: AmqpProcessor<Data, Result>;
  readonly #runtime: JobRuntime;
  readonly #concurrency: number;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #ownsConnection: boolean;
  #session: Session | undefined;
  #closing = false;
  #closed: Promise<void> | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #resumeTimer: NodeJS.Timeout | undefined;
  /** Epoch ms until which flow control holds consumption stopped. */
  #pausedUntil = 0;
  #ready: { resolve: () => void; reject: (error: Error) => void } | undefined;

  constructor(queue: string, processor: AmqpProcessor<Data, Result>, options: AmqpConsumerOptions<Data>) {
    checkOptions(queue, processor, options);
    this.#queue = queue;
    this.#options = options;
    this.#processor = processor;
    this.#concurrency = options.concurrency ?? 1;
    this.#ownsConnection = !isChannelModel(options.connection);
    this.policy = resolveWorkerPolicy(options.policy, 'createConsumer');
    this.deadLetters = options.deadLetters === false ? undefined : options.deadLetters;
    this.events = new EventBus((error) => this.#report(error));
    const clock = options.clock ?? systemClock;
    this.flow = options.flowControl
      ? new FlowController(
          { parkHorizonMs: AMQP_PARK_HORIZON_MS, ...flowOptionsWithoutRateAlias(options.flowControl) },
          {
            queue,
            breaker: options.breaker as unknown as FlowBreaker,
            clock,
            emit: (event, payload) => this.events.emit(event, payload as never),
            internalError: (error) => this.#report(error),
            pauseQueue: async (forMs) => this.#pause(forMs),
            budget: flowBudgetOf(options.budget),
          },
        )
      : undefined;
    this.flow?.watch(Object.values(options.dependencies ?? {}));
    this.limits = workerLimitController(options, {
      queue,
      policy: this.policy,
      clock,
      random: options.random ?? systemRandom,
      emit: (event, payload) => this.events.emit(event, payload as never),
      internalError: (error) => this.#report(error),
      pauseQueue: (forMs) => this.#pause(forMs),
    })?.controller;
    if (options.flowControl?.maxRatePerSecond !== undefined)
      process.emitWarning(
        `queue "${queue}": flowControl.maxRatePerSecond is deprecated: give limits: { <dependency>: { maxRatePerSecond } } instead (docs/limits.md); it is enforced as limits now`,
        'DeprecationWarning',
      );
    this.#runtime = new JobRuntime({
      queue,
      policy: this.policy,
      budget: options.budget,
      breaker: options.breaker,
      dependencies: options.dependencies ?? {},
      attempts: (options.attemptState ?? this.deadLetters) as NonNullable<typeof options.attemptState>,
      deadLetters: this.deadLetters,
      guard: options.idempotency?.guard,
      clock,
      random: options.random ?? systemRandom,
      events: this.events,
      internalError: (error) => this.#report(error),
      maxStalls: options.maxRedeliveries ?? 1,
      instrumentation: options.instrumentation,
      flow: this.flow,
      limits: this.limits,
      bookkeepingBackoff: options.bookkeepingBackoff,
    });
    // A parked message cannot be pulled out of its bucket early: it comes back by itself and meets the gate.
    this.flow?.startReleasing(async () => 'gone');
    this.ready = new Promise<void>((resolve, reject) => {
      this.#ready = { resolve, reject };
    });
    // Nobody has to wait for `ready`; a consumer closed before it connected must not crash the process.
    this.ready.catch(() => {});
    this.#deadLettersRegistered = Promise.resolve()
      .then(() => this.deadLetters?.registerQueue(queue))
      .catch((error: unknown) => this.#report(error));
    this.#connect(1);
  }

  readonly #deadLettersRegistered: Promise<void>;

  /** The queue this consumer takes messages from. */
  get queue(): string {
    return this.#queue;
  }

  /** Messages being processed right now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Opens the connection and its channels, declares what is missing and consumes; on failure, tries again later. */
  #connect(attempt: number): void {
    if (this.#closing) return;
    this.#open()
      .then((session) => {
        if (this.#closing) {
          session.lost = true;
          void this.#closeSession(session);
          return;
        }
        this.#session = session;
        this.events.emit('connected', { attempt });
        this.#ready?.resolve();
      })
      .catch((error: unknown) => {
        this.#report(error);
        if (!this.#ownsConnection) {
          // An open connection handed in cannot be reopened: say so once, and stop.
          void this.close();
          return;
        }
        this.#scheduleConnect(attempt + 1);
      });
  }

  async #open(): Promise<Session> {
    const model = await openConnection(this.#options.connection as AmqpConnection);
    try {
      const publish = await model.createConfirmChannel();
      const consume = await model.createChannel();
      const session: Session = {
        model,
        consume,
        publish,
        consumerTag: undefined,
        consumePending: false,
        failedQueueDeclared: false,
        lost: false,
      };
      const lost = (error?: unknown) => this.#lost(session, error);
      model.on('close', lost);
      model.on('error', (error: Error) => this.#report(error));
      consume.on('close', lost);
      publish.on('close', lost);
      consume.on('error', (error: Error) => this.#report(error));
      publish.on('error', (error: Error) => this.#report(error));
      await declareDelayBuckets(publish);
      await this.#ensureQueue(model);
      await consume.prefetch(this.#concurrency);
      if (Date.now() >= this.#pausedUntil) await this.#consume(session);
      else this.#scheduleResume(session);
      return session;
    } catch (error) {
      if (this.#ownsConnection) await model.close().catch(() => {});
      throw error;
    }
  }

  /** Declares the queue (durable, quorum) when it does not exist; a queue that exists is used as it is. */
  async #ensureQueue(model: ChannelModel): Promise<void> {
    // A check of a missing queue closes its channel: a throw-away one.
    const probe = await model.createChannel();
    probe.on('error', () => {});
    try {
      await probe.checkQueue(this.#queue);
      await probe.close();
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 404) throw error;
    }
    const declare = this.#options.declareQueue;
    if (declare === false)
      throw new InvalidInputError(
        `createConsumer: queue "${this.#queue}" does not exist and declareQueue is false: declare it first, or let the consumer declare it`,
      );
    const channel = await model.createChannel();
    try {
      await channel.assertQueue(this.#queue, {
        durable: true,
        ...declare,
        arguments: { 'x-queue-type': 'quorum', ...(declare?.arguments as object | undefined) },
      });
    } finally {
      await channel.close().catch(() => {});
    }
  }

  async #consume(session: Session): Promise<void> {
    session.consumePending = true;
    let consumerTag: string;
    try {
      ({ consumerTag } = await this.#subscribe(session));
    } finally {
      session.consumePending = false;
    }
    // A pause (or a close) that came while the broker was answering had no tag to cancel: cancel now, or
    // the consumer would go on taking messages for the whole pause.
    if (this.#closing || Date.now() < this.#pausedUntil) {
      await session.consume.cancel(consumerTag).catch((error: unknown) => this.#report(error));
      if (!this.#closing) this.#scheduleResume(session);
      return;
    }
    session.consumerTag = consumerTag;
  }

  #subscribe(session: Session): Promise<{ consumerTag: string }> {
    return session.consume.consume(
      this.#queue,
      (message) => {
        if (message === null) {
          // The broker cancelled the consumer (the queue was deleted): start over on a new connection.
          void this.#restart(session, new Error(`queue "${this.#queue}": the broker cancelled the consumer`));
          return;
        }
        this.#track(this.#handle(session, message));
      },
      { noAck: false },
    );
  }

  #track(work: Promise<void>): void {
    this.#inFlight.add(work);
    void work.finally(() => this.#inFlight.delete(work));
  }

  /** One delivery, from its arrival to its ack. */
  async #handle(session: Session, message: ConsumeMessage): Promise<void> {
    const clock = this.#options.clock ?? systemClock;
    try {
      const nowMs = clock.now();
      const dueAt = numberHeader(message.properties.headers, HEADER.dueAt);
      if (dueAt !== undefined && dueAt > nowMs) {
        // Back from a bucket with time left: the next hop, nothing runs.
        await this.#publishCopy(session, message, ownHeadersOf(message), dueAt);
        session.consume.ack(message);
        return;
      }
      const handle = new DeliveryHandle(
        message,
        this.#queue,
        (original, headers, due) => this.#publishCopy(session, original, headers, due),
        nowMs,
      );
      if (needsStallCount(message)) {
        // A classic queue only flags a redelivery: a copy carries the count, so the next one can grow it.
        await this.#publishCopy(session, message, handle.copyHeaders(handle.starts - 1), nowMs);
        session.consume.ack(message);
        return;
      }
      const keyFn = this.#options.idempotency?.key;
      const job = handle.job as AmqpJob<Data>;
      const outcome: RunOutcome<Result> = await this.#runtime.run(
        handle,
        (ctx) => this.#processor(job, ctx),
        keyFn && (() => keyFn(job)),
      );
      await this.#settle(session, handle, outcome, clock.now());
    } catch (error) {
      // Nothing was decided for this delivery (a copy could not be published): it comes back as a
      // redelivery, counted as a stall, when this channel goes; put back now, it would spin.
      this.#report(error);
      await this.#restart(session, error);
    }
  }

  /** Acks the delivery the way the runtime's outcome says, after whatever it needs published is confirmed. */
  async #settle(
    session: Session,
    handle: DeliveryHandle,
    outcome: RunOutcome<Result>,
    nowMs: number,
  ): Promise<void> {
    switch (outcome.type) {
      case 'completed':
      case 'delayed':
      case 'dead-lettered':
        break;
      case 'paused':
        // Flow control holds the queue: the message waits in a bucket, never requeued at full speed.
        await this.#publishCopy(
          session,
          handle.message,
          handle.copyHeaders(handle.starts - 1),
          nowMs + outcome.forMs,
        );
        break;
      case 'failed':
        await this.#publishFailed(session, handle, outcome.message);
        break;
      case 'pass-through':
        await this.#publishFailed(
          session,
          handle,
          String((outcome.error as Error)?.message ?? outcome.error),
        );
        break;
    }
    session.consume.ack(handle.message);
  }

  /**
   * Publishes a copy of `message` (its body, properties and producer headers, with stormguard's headers
   * replaced by `own`) to run at `dueAtMs`: through the delay buckets when that is ahead, straight to the
   * queue otherwise. Resolves once the broker confirmed it. The producer's `expiration` is not copied: a
   * retry must not expire in a bucket.
   */
  #publishCopy(
    session: Session,
    message: ConsumeMessage,
    own: Record<string, unknown>,
    dueAtMs: number,
  ): Promise<void> {
    const { expiration: _expiration, ...properties } = propertiesOf(message);
    const headers: Record<string, unknown> = {
      ...producerHeaders(message),
      ...own,
      [HEADER.dueAt]: dueAtMs,
    };
    const remaining = dueAtMs - (this.#options.clock ?? systemClock).now();
    const publishOptions: Options.Publish = {
      ...(properties as Options.Publish),
      headers,
      persistent: true,
    };
    if (remaining <= 0) return confirm(session.publish, '', this.#queue, message.content, publishOptions);
    headers[HEADER.bucket] = String(nextBucket(remaining));
    return confirm(session.publish, DELAY_EXCHANGE, this.#queue, message.content, publishOptions);
  }

  /** Moves a message no store holds to `<queue>.stormguard-failed`, with why. */
  async #publishFailed(session: Session, handle: DeliveryHandle, reason: string): Promise<void> {
    const failedQueue = failedQueueOf(this.#queue);
    if (!session.failedQueueDeclared) {
      await session.publish.assertQueue(failedQueue, {
        durable: true,
        arguments: { 'x-queue-type': 'quorum' },
      });
      session.failedQueueDeclared = true;
    }
    const { expiration: _expiration, ...properties } = propertiesOf(handle.message);
    await confirm(session.publish, '', failedQueue, handle.message.content, {
      ...(properties as Options.Publish),
      headers: {
        ...producerHeaders(handle.message),
        ...handle.copyHeaders(handle.starts),
        'x-stormguard-failed-reason': reason,
      },
      persistent: true,
    });
  }

  /** Flow control stops consumption for `forMs` (fleet-wide, through its store; here, `basic.cancel`). */
  #pause(forMs: number): void {
    const until = Date.now() + forMs;
    if (until <= this.#pausedUntil) return;
    this.#pausedUntil = until;
    const session = this.#session;
    if (!session) return;
    const tag = session.consumerTag;
    session.consumerTag = undefined;
    if (tag !== undefined) session.consume.cancel(tag).catch((error: unknown) => this.#report(error));
    this.#scheduleResume(session);
  }

  #scheduleResume(session: Session): void {
    clearTimeout(this.#resumeTimer);
    this.#resumeTimer = setTimeout(
      () => {
        if (
          this.#closing ||
          this.#session !== session ||
          session.consumerTag !== undefined ||
          session.consumePending
        )
          return;
        if (Date.now() < this.#pausedUntil) {
          this.#scheduleResume(session);
          return;
        }
        this.#consume(session).catch((error: unknown) => void this.#restart(session, error));
      },
      Math.max(0, this.#pausedUntil - Date.now()),
    );
  }

  /** A channel or the connection went: drop the session and connect again (its deliveries come back as redeliveries). */
  #lost(session: Session, error?: unknown): void {
    if (session.lost) return;
    if (error) this.#report(error);
    void this.#restart(session, error);
  }

  async #restart(session: Session, _cause?: unknown): Promise<void> {
    if (session.lost) return;
    session.lost = true;
    if (this.#session === session) this.#session = undefined;
    // A connection that dropped may never answer a close: the close is not waited for.
    void this.#closeSession(session);
    if (this.#closing) return;
    if (!this.#ownsConnection) {
      this.#report(
        new Error(
          `createConsumer: queue "${this.#queue}": the amqplib connection it was given closed, and a connection handed in cannot be reopened; give a URL to have the consumer reconnect`,
        ),
      );
      await this.close();
      return;
    }
    this.#scheduleConnect(1);
  }

  /** Connects again after the backoff of `attempt`, unless a reconnect is already scheduled. */
  #scheduleConnect(attempt: number): void {
    if (this.#closing || this.#reconnectTimer !== undefined) return;
    this.#reconnectTimer = setTimeout(
      () => {
        this.#reconnectTimer = undefined;
        this.#connect(attempt);
      },
      reconnectDelayMs(attempt, this.#options.reconnect ?? {}, this.#options.random ?? systemRandom),
    );
  }

  async #closeSession(session: Session): Promise<void> {
    // The channels first: a channel's close follows its own acks, so the broker has every ack sent before
    // it. A connection's close can overtake acks still queued on a channel, and their deliveries would
    // come back to run again.
    await session.consume.close().catch(() => {});
    await session.publish.close().catch(() => {});
    if (this.#ownsConnection) await session.model.close().catch(() => {});
  }

  #report(error: unknown): void {
    const err = error instanceof Error ? error : new Error(String(error));
    if (this.events.has('error')) this.events.emit('error', err);
    else process.emitWarning(err, 'StormguardWarning');
  }

  /**
   * Graceful shutdown: stops consuming, lets the messages in hand finish (each acked after its outcome),
   * flushes the budget's and the breaker's batched successes, and closes the connection it opened. A
   * connection handed in stays open (its channels close). Safe to call twice.
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing = true;
      clearTimeout(this.#reconnectTimer);
      clearTimeout(this.#resumeTimer);
      this.#ready?.reject(
        new Error(`createConsumer: queue "${this.#queue}": closed before it was consuming`),
      );
      const session = this.#session;
      if (session?.consumerTag !== undefined)
        await session.consume.cancel(session.consumerTag).catch(() => {});
      await this.flow?.stop();
      // Messages waiting for a limit's slot before they start are held now, not at the end of their wait.
      this.limits?.holdWaits();
      await Promise.all(this.#inFlight);
      try {
        await this.#options.budget?.flush();
        await this.#options.breaker?.flush?.();
        await this.limits?.stop();
        await this.#deadLettersRegistered;
      } finally {
        this.#session = undefined;
        if (session) {
          session.lost = true;
          await this.#closeSession(session);
        }
      }
    })();
    return this.#closed;
  }
}

/**
 * Creates a RabbitMQ consumer for `queue` whose messages run under stormguard's retry control (see
 * {@link AmqpConsumer}). It connects at once; `await consumer.ready` to know it is consuming.
 *
 * @example
 * import { createConsumer } from 'stormguard/amqp';
 * const consumer = createConsumer('orders', async (job, ctx) => {
 *   await ctx.call('payments', () => payments.charge(job.json<{ id: string }>().id));
 * }, { connection: process.env.AMQP_URL, policy: 'idempotent-internal', deadLetters, budget, breaker });
 */
export function createConsumer<Data = unknown, Result = unknown>(
  queue: string,
  processor: AmqpProcessor<Data, Result>,
  options: AmqpConsumerOptions<Data>,
): AmqpConsumer<Data, Result> {
  return new AmqpConsumer(queue, processor, options);
}

/** Publishes on a confirm channel and resolves once the broker confirmed (rejects on a nack). */
export function confirm(
  channel: ConfirmChannel,
  exchange: string,
  routingKey: string,
  content: Buffer,
  options: Options.Publish,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    try {
      channel.publish(exchange, routingKey, content, options, (error) =>
        error
          ? reject(error instanceof Error ? error : new Error(`the broker refused the message: ${error}`))
          : resolve(),
      );
    } catch (error) {
      reject(error);
    }
  });
}

/** stormguard's headers as the message carries them (a hop keeps them as they are). */
function ownHeadersOf(message: ConsumeMessage): Record<string, unknown> {
  const own: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(message.properties.headers ?? {}))
    if (name.startsWith('x-stormguard-')) own[name] = value;
  return own;
}

function checkOptions<Data>(queue: string, processor: unknown, options: AmqpConsumerOptions<Data>): void {
  if (typeof queue !== 'string' || queue === '' || queue.startsWith('amq.') || queue.length > 200)
    throw new InvalidInputError(
      `createConsumer: queue must be a non-empty name of at most 200 characters not starting with "amq." (reserved by RabbitMQ), got ${JSON.stringify(queue)}`,
    );
  if (typeof processor !== 'function')
    throw new InvalidInputError(
      'createConsumer: the processor must be a function (job, ctx) => Promise<result>',
    );
  if (options && typeof options === 'object') checkConsumerOptionNames(options);
  if (!options || typeof options !== 'object')
    throw new InvalidInputError('createConsumer: options are required');
  checkConnection(options.connection, 'createConsumer');
  if (options.deadLetters === undefined)
    throw new InvalidInputError(
      'createConsumer: options.deadLetters is required: a DeadLetterStore (MemoryDeadLetterStore, RedisDeadLetterStore from stormguard/redis, PostgresDeadLetterStore from stormguard/postgres), or false to move terminal messages to <queue>.stormguard-failed',
    );
  if (options.deadLetters === false && !options.attemptState)
    throw new InvalidInputError(
      'createConsumer: with deadLetters: false, give attemptState (an AttemptStateStore, e.g. a dead-letter store) to keep attempt counts between attempts',
    );
  for (const [name, dependency] of Object.entries(options.dependencies ?? {})) {
    const problem = dependencyNameProblem(dependency);
    if (problem)
      throw new InvalidInputError(
        `createConsumer: dependencies.${name} ${problem}; name the downstream system, e.g. "search" (got ${JSON.stringify(dependency)})`,
      );
  }
  if (
    options.concurrency !== undefined &&
    !(Number.isInteger(options.concurrency) && options.concurrency >= 1)
  )
    throw new InvalidInputError(
      `createConsumer: concurrency must be an integer >= 1 (it is the channel's prefetch; 0 would mean unlimited in RabbitMQ), got ${options.concurrency}`,
    );
  const max = options.maxRedeliveries;
  if (max !== undefined && !(Number.isInteger(max) && max >= 0))
    throw new InvalidInputError(`createConsumer: maxRedeliveries must be an integer >= 0, got ${max}`);
  if (options.flowControl) {
    const breaker = options.breaker as Partial<FlowBreaker> | undefined;
    if (!breaker || typeof breaker.state !== 'function' || typeof breaker.optionsFor !== 'function')
      throw new InvalidInputError(
        'createConsumer: flowControl needs a breaker (a CircuitBreaker on a shared store): flow control holds messages while the breaker says their dependency is down',
      );
  }
  if (options.idempotency && typeof options.idempotency.key !== 'function')
    throw new InvalidInputError(
      'createConsumer: idempotency.key must be a function (job) => string | undefined',
    );
  checkWorkerLimits('createConsumer', options, false);
}
