import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { type Clock, systemClock } from '../common/clock.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { DeadLetterRecord, DeadLetterStore } from '../runtime/contracts.js';
import { type AmqpConnection, checkConnection, isChannelModel, openConnection } from './connection.js';
import { importedRecord } from './import-record.js';

/**
 * Options of {@link importDeadLetters}.
 *
 * @example
 * const options: ImportDeadLettersOptions = {
 *   connection: 'amqp://guest:guest@127.0.0.1:5672/orders', from: 'orders.dlx', queue: 'orders', store,
 *   limit: 10_000, onProgress: (p) => console.log(`${p.imported} imported, ${p.ratePerSecond}/s`),
 * };
 */
export interface ImportDeadLettersOptions {
  /** An AMQP URL or amqplib connect options (opened and closed by the import), or an open connection (left open). */
  connection: AmqpConnection;
  /** The dead-letter queue RabbitMQ dead-lettered the messages into (it must exist). */
  from: string;
  /** The queue the records are filed under: the work queue a replay puts them back on. */
  queue: string;
  /** Where they are filed. */
  store: DeadLetterStore;
  /** Job name → dependency, as the queue's consumer maps them. Default `{}`: a name is its own dependency. */
  dependencies?: Readonly<Record<string, string>>;
  /** Messages taken from the queue and not yet filed and acked, at most. Default 100. */
  prefetch?: number;
  /** Import at most this many messages. Default: until the queue is empty. */
  limit?: number;
  /** Aborting stops the import: what is filed is acked, the rest stays in the dead-letter queue. */
  signal?: AbortSignal;
  /** Called after every message. */
  onProgress?: (progress: ImportProgress) => void;
  /**
   * How long an imported message is remembered, ms (its attempt state in the store): an import run again
   * within it files a message it filed before, and did not get to ack, nothing twice. Default 7 days.
   */
  dedupTtlMs?: number;
  /** Time source for the records' import time and the rate. Default: the system clock. */
  clock?: Clock;
}

/**
 * Where an import is.
 *
 * @example
 * const progress: ImportProgress = { imported: 400, duplicates: 0, handled: 400, total: 1000, elapsedMs: 2000, ratePerSecond: 200 };
 */
export interface ImportProgress {
  /** Messages filed by this import (and acked). */
  imported: number;
  /** Messages an earlier, interrupted import had filed: acked, nothing filed. */
  duplicates: number;
  /** `imported + duplicates`. */
  handled: number;
  /** Messages ready in the dead-letter queue when the import started (capped by `limit`). */
  total: number;
  elapsedMs: number;
  /** Messages handled per second so far. */
  ratePerSecond: number;
}

/**
 * What an import did. Plain JSON.
 *
 * @example
 * const report = await importDeadLetters(options);
 * if (report.stoppedBecause !== 'drained') console.log(`${report.left} messages left in ${report.from}`);
 */
export interface ImportReport extends ImportProgress {
  queue: string;
  from: string;
  /**
   * Why it ended: `drained` (the dead-letter queue is empty), `limit` (`limit` messages handled) or
   * `aborted` (the signal). A failure (the store, the connection) rejects instead.
   */
  stoppedBecause: 'drained' | 'limit' | 'aborted';
  /**
   * Messages left in the dead-letter queue at the end, at least: those ready, and those the import was sent
   * and did not take. A quorum queue takes back what it had out to the import a moment after the import's
   * channel closes, and may count one more then. 0 when `stoppedBecause` is `drained`.
   */
  left: number;
}

const DEFAULT_PREFETCH = 100;
const DEFAULT_DEDUP_TTL_MS = 7 * 86_400_000;
/** How often an idle import asks whether the queue is empty. */
const IDLE_CHECK_MS = 100;
/** Messages identical in every byte, each a first delivery, told apart by creation times 1 ms apart. */
const MAX_TWINS = 1_000;

/**
 * Moves the messages RabbitMQ dead-lettered into a dead-letter queue (`from`) into stormguard's
 * dead-letter store, as records of `queue`, one per message, as a stormguard consumer of `queue` would
 * have filed them (see `importedRecord`: reason `broker-dead-lettered`, the `x-death` headers kept, the
 * detail saying RabbitMQ's reason). Then `dlq replay` and the console replay them, paced and resumable.
 *
 * Nothing is lost: a message is acked only after the store confirmed its record. Nothing is filed twice
 * when an import is killed and run again: a message is filed under a job id and creation time derived
 * from its bytes (a hash of its body, properties and headers, `x-death` included), and the store files
 * one job once while its attempt state lives (`dedupTtlMs`), so a message filed and not acked before the
 * kill comes back as a redelivery that files nothing. A first delivery whose identity is taken is a
 * different message identical in every byte (a producer that sends the same bytes twice, dead-lettered
 * within the same second): it is filed under the next millisecond. The one case this cannot tell apart:
 * such a twin whose own import was killed between its delivery and its filing is taken, on redelivery,
 * for the twin filed before it.
 *
 * At most `prefetch` messages are in hand at once. The import ends when the queue is empty, after
 * `limit` messages, or when `signal` aborts (in-hand messages are filed and acked first; those not yet
 * started go back to the queue). A failure of the store or the broker rejects; what was filed by then is
 * acked, the rest stays in the dead-letter queue for the next run.
 *
 * @example
 * import { importDeadLetters } from 'stormguard/amqp';
 * const report = await importDeadLetters({ connection: process.env.AMQP_URL!, from: 'orders.dlx', queue: 'orders', store });
 * console.log(`${report.imported} imported, ${report.duplicates} already filed, ${report.left} left`);
 */
export async function importDeadLetters(options: ImportDeadLettersOptions): Promise<ImportReport> {
  checkImportOptions(options);
  const model = await openConnection(options.connection);
  // A connection error also closes the channel, which is how the import hears of it.
  const ignore = () => {};
  model.on('error', ignore);
  try {
    await checkSource(model, options.from);
    await options.store.registerQueue(options.queue);
    const channel = await model.createChannel();
    try {
      return await new Import(channel, options).run();
    } finally {
      await channel.close().catch(() => {});
    }
  } finally {
    if (!isChannelModel(options.connection)) await model.close().catch(() => {});
    model.off('error', ignore);
  }
}

/** A missing dead-letter queue is bad input, named (checked on a throw-away channel: a 404 closes it). */
async function checkSource(model: ChannelModel, from: string): Promise<void> {
  const probe = await model.createChannel();
  probe.on('error', () => {});
  try {
    await probe.checkQueue(from);
  } catch (error) {
    if ((error as { code?: unknown }).code === 404)
      throw new InvalidInputError(
        `importDeadLetters: the dead-letter queue "${from}" does not exist on this vhost; name the queue bound to the dead-letter exchange`,
      );
    throw error;
  }
  await probe.close().catch(() => {});
}

/** One run of an import over one channel. */
class Import {
  readonly #channel: Channel;
  readonly #options: ImportDeadLettersOptions;
  readonly #clock: Clock;
  readonly #startedAt: number;
  readonly #inFlight = new Set<Promise<void>>();
  #total = 0;
  #imported = 0;
  #duplicates = 0;
  /** Deliveries taken in hand (filed or being filed). */
  #taken = 0;
  /** Deliveries that arrived once the import took no more. */
  #untaken = 0;
  /** `consuming`; `draining` (the queue looked empty: what still arrives is filed); `stopping` (nothing more is taken). */
  #state: 'consuming' | 'draining' | 'stopping' = 'consuming';
  #stoppedBecause: ImportReport['stoppedBecause'] = 'drained';
  #failure: unknown;
  #consumerTag: string | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #checking = false;
  #finished!: () => void;

  constructor(channel: Channel, options: ImportDeadLettersOptions) {
    this.#channel = channel;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#startedAt = this.#clock.now();
  }

  async run(): Promise<ImportReport> {
    const { from, limit, signal } = this.#options;
    const channel = this.#channel;
    channel.on('error', (error: Error) => this.#fail(error));
    channel.on('close', () =>
      this.#fail(new Error(`the channel to RabbitMQ closed while importing "${from}"`)),
    );
    const ready = (await channel.checkQueue(from)).messageCount;
    this.#total = limit === undefined ? ready : Math.min(ready, limit);
    if (limit === 0 || signal?.aborted) {
      this.#stoppedBecause = limit === 0 ? 'limit' : 'aborted';
      return this.#report(ready);
    }
    await channel.prefetch(
      Math.min(this.#options.prefetch ?? DEFAULT_PREFETCH, limit ?? Number.MAX_SAFE_INTEGER),
    );
    const finished = new Promise<void>((resolve) => {
      this.#finished = resolve;
    });
    const onAbort = () => this.#stop('aborted');
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const { consumerTag } = await channel.consume(from, (message) => this.#take(message), { noAck: false });
      this.#consumerTag = consumerTag;
      this.#whenIdle();
      await finished;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      clearTimeout(this.#idleTimer);
    }
    // Every delivery dispatched before the cancel is in hand now: wait for their filing (and acks).
    await this.#cancel();
    await this.#settled();
    if (this.#failure !== undefined) throw this.#failureError();
    // Ready ones, and those delivered to this import and not taken: they go back when its channel closes
    // (counted here: a quorum queue takes them back a moment after the close, so counting then misses some).
    const { messageCount } = await channel.checkQueue(from);
    return this.#report(messageCount + this.#untaken);
  }

  /** A delivery: filed, then acked; ignored (so it goes back to the queue) once the import stops taking any. */
  #take(message: ConsumeMessage | null): void {
    if (message === null) {
      this.#fail(
        new Error(`the broker cancelled the import's consumer of "${this.#options.from}" (was it deleted?)`),
      );
      return;
    }
    const { limit } = this.#options;
    if (this.#state === 'stopping' || (limit !== undefined && this.#taken >= limit)) {
      // Left unacked: the broker puts it back when the channel closes.
      this.#untaken++;
      return;
    }
    this.#taken++;
    clearTimeout(this.#idleTimer);
    const work = this.#file(message)
      .then((created) => {
        // Acked only now: the store holds the record (a kill before this ack files nothing twice on rerun).
        this.#channel.ack(message);
        if (created) this.#imported++;
        else this.#duplicates++;
        this.#options.onProgress?.(this.#progress());
        if (limit !== undefined && this.#imported + this.#duplicates >= limit) this.#stop('limit');
      })
      .catch((error: unknown) => this.#fail(error))
      .finally(() => {
        this.#inFlight.delete(work);
        if (this.#inFlight.size === 0) this.#whenIdle();
      });
    this.#inFlight.add(work);
  }

  /** Files the message's record; true when this call filed it, false when an earlier import had. */
  async #file(message: ConsumeMessage): Promise<boolean> {
    const { store, queue, from } = this.#options;
    const ttlMs = this.#options.dedupTtlMs ?? DEFAULT_DEDUP_TTL_MS;
    const record = importedRecord(message, {
      queue,
      from,
      dependencies: this.#options.dependencies ?? {},
      nowMs: this.#clock.now(),
    });
    for (let twin = 0; twin < MAX_TWINS; twin++) {
      const filed: DeadLetterRecord = twin === 0 ? record : { ...record, createdAt: record.createdAt + twin };
      const filing = await store.file(filed, { attempts: filed.attemptsMade, deferrals: 0 }, ttlMs);
      if (filing.created) return true;
      // A redelivery: an earlier import took this message, and filed it before it stopped.
      if (message.fields.redelivered) return false;
      // A first delivery nobody took before: another message, identical in every byte, holds the identity.
    }
    throw new Error(
      `importDeadLetters: ${MAX_TWINS} messages identical to ${record.jobId} are filed already; the store refuses to tell more apart`,
    );
  }

  /** Nothing in hand: ends the import once the broker says the queue is empty, else looks again shortly. */
  #whenIdle(): void {
    if (this.#state !== 'consuming' || this.#inFlight.size > 0 || this.#checking) return;
    this.#checking = true;
    this.#channel
      .checkQueue(this.#options.from)
      .then(({ messageCount }) => {
        this.#checking = false;
        if (this.#state !== 'consuming' || this.#inFlight.size > 0) return;
        if (messageCount === 0) {
          this.#state = 'draining';
          this.#finished();
          return;
        }
        clearTimeout(this.#idleTimer);
        this.#idleTimer = setTimeout(() => this.#whenIdle(), IDLE_CHECK_MS);
      })
      .catch((error: unknown) => {
        this.#checking = false;
        this.#fail(error);
      });
  }

  #stop(why: ImportReport['stoppedBecause']): void {
    if (this.#state === 'stopping') return;
    this.#state = 'stopping';
    this.#stoppedBecause = why;
    this.#finished?.();
  }

  #fail(error: unknown): void {
    this.#failure ??= error;
    this.#stop(this.#stoppedBecause);
  }

  async #cancel(): Promise<void> {
    const tag = this.#consumerTag;
    this.#consumerTag = undefined;
    if (tag !== undefined && this.#failure === undefined)
      await this.#channel.cancel(tag).catch((error: unknown) => this.#fail(error));
  }

  async #settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  #progress(): ImportProgress {
    const elapsedMs = Math.max(0, this.#clock.now() - this.#startedAt);
    const handled = this.#imported + this.#duplicates;
    return {
      imported: this.#imported,
      duplicates: this.#duplicates,
      handled,
      total: Math.max(this.#total, handled),
      elapsedMs,
      ratePerSecond: elapsedMs > 0 ? Math.round((handled / elapsedMs) * 1000 * 10) / 10 : 0,
    };
  }

  #report(left: number): ImportReport {
    return {
      queue: this.#options.queue,
      from: this.#options.from,
      ...this.#progress(),
      stoppedBecause: this.#stoppedBecause,
      left,
    };
  }

  #failureError(): Error {
    const cause = this.#failure instanceof Error ? this.#failure.message : String(this.#failure);
    const { imported, duplicates } = this.#progress();
    return new Error(
      `importing "${this.#options.from}" into "${this.#options.queue}" stopped after ${imported} imported (${duplicates} filed before): ${cause}; the rest stays in "${this.#options.from}", run the import again`,
      { cause: this.#failure },
    );
  }
}

function checkImportOptions(options: ImportDeadLettersOptions): void {
  if (!options || typeof options !== 'object')
    throw new InvalidInputError('importDeadLetters: options are required');
  checkConnection(options.connection, 'importDeadLetters');
  for (const field of ['from', 'queue'] as const) {
    const name = options[field];
    if (typeof name !== 'string' || name === '' || name.length > 255)
      throw new InvalidInputError(
        `importDeadLetters: ${field} must be a queue name (1 to 255 characters), got ${JSON.stringify(name)}`,
      );
  }
  if (!options.store || typeof options.store.file !== 'function')
    throw new InvalidInputError('importDeadLetters: store must be a DeadLetterStore');
  const { prefetch, limit, dedupTtlMs } = options;
  if (prefetch !== undefined && !(Number.isInteger(prefetch) && prefetch >= 1 && prefetch <= 65_535))
    throw new InvalidInputError(
      `importDeadLetters: prefetch must be an integer from 1 to 65535 (0 would mean unlimited in RabbitMQ), got ${prefetch}`,
    );
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0))
    throw new InvalidInputError(`importDeadLetters: limit must be an integer >= 0, got ${limit}`);
  if (dedupTtlMs !== undefined && !(Number.isInteger(dedupTtlMs) && dedupTtlMs > 0))
    throw new InvalidInputError(
      `importDeadLetters: dedupTtlMs must be an integer above 0, got ${dedupTtlMs}`,
    );
}
