import { randomUUID } from 'node:crypto';
import type { ConsumeMessage } from 'amqplib';
import type { JobRef } from '../runtime/contracts.js';
import type { JobHandle } from '../runtime/job-handle.js';
import type { JobNote } from '../runtime/pending-outcome.js';
import { type AmqpJob, amqpJob, messageData } from './amqp-job.js';
import { HEADER, numberHeader, stringHeader } from './headers.js';

/**
 * Publishes a copy of a delivery with stormguard's headers set as given (the others as they came), to
 * run at `dueAtMs`, and resolves once the broker confirmed it.
 */
export type PublishCopy = (
  message: ConsumeMessage,
  ownHeaders: Record<string, unknown>,
  dueAtMs: number,
) => Promise<void>;

/**
 * The job runtime's view of one delivery. What the runtime reads travels in the message's headers
 * (stormguard's, on every copy it publishes): the job's id, when it was first received, how often it ran
 * and stalled, its note and its replay lineage. A message straight from a producer has none of them: it
 * gets a fresh id (a `messageId` is the producer's, and may be reused), and has never run.
 *
 * Stalls are deliveries that ended with no outcome (the consumer or its connection died): a quorum queue
 * counts them itself (`x-delivery-count`); a classic queue only flags a redelivery, so the consumer
 * turns such a delivery into a copy that counts it before running it (see `needsStallCount`).
 *
 * @example
 * const handle = deliveryHandle(message, 'orders', publishCopy, Date.now());
 * const outcome = await runtime.run(handle, (ctx) => processor(handle.job, ctx));
 */
export class DeliveryHandle implements JobHandle {
  readonly ref: JobRef;
  readonly name: string;
  readonly starts: number;
  readonly finishes: number;
  readonly stalls: number;
  readonly replays: number;
  readonly replayedFrom: string | undefined;
  readonly replayedTraceLinks: readonly string[] | undefined;
  readonly job: AmqpJob;
  /** The note as the message carried it; `keepNote` replaces it for the next copy. */
  #note: JobNote | undefined;

  constructor(
    readonly message: ConsumeMessage,
    queue: string,
    private readonly publishCopy: PublishCopy,
    nowMs: number,
  ) {
    const headers = message.properties.headers;
    const id = stringHeader(headers, HEADER.jobId) ?? randomUUID();
    this.job = amqpJob(message, queue, id);
    this.name = this.job.name;
    const createdAt =
      numberHeader(headers, HEADER.createdAt) ?? timestampMs(message.properties.timestamp) ?? nowMs;
    this.ref = { queue, jobId: id, createdAt };
    const before = numberHeader(headers, HEADER.starts) ?? 0;
    this.stalls = (numberHeader(headers, HEADER.stalls) ?? 0) + deliveryStalls(message);
    this.finishes = before;
    this.starts = before + 1 + deliveryStalls(message);
    this.replays = numberHeader(headers, HEADER.replays) ?? 0;
    this.replayedFrom = stringHeader(headers, HEADER.replayedFrom);
    this.replayedTraceLinks = jsonHeader<string[]>(headers, HEADER.traceLinks);
    this.#note = jsonHeader<JobNote>(headers, HEADER.note);
  }

  get data(): unknown {
    return messageData(this.job);
  }

  get opts(): Record<string, unknown> {
    return { engine: 'amqp' };
  }

  get note(): JobNote | undefined {
    return this.#note;
  }

  /** The note travels with the copy the next `moveToDelayed` publishes (a write the runtime always makes next). */
  async keepNote(note: JobNote | undefined): Promise<void> {
    this.#note = note;
  }

  /** Publishes the copy that runs next (confirmed), counting this run; the delivery is acked after. */
  moveToDelayed(dueAtMs: number): Promise<void> {
    return this.publishCopy(this.message, this.copyHeaders(this.starts), dueAtMs);
  }

  /**
   * stormguard's headers for a copy of this job: `starts` executions so far (a park or a stall count
   * passes the current count, since nothing ran).
   */
  copyHeaders(starts: number, stalls = this.stalls): Record<string, unknown> {
    const headers: Record<string, unknown> = {
      [HEADER.jobId]: this.ref.jobId,
      [HEADER.createdAt]: this.ref.createdAt,
      [HEADER.starts]: starts,
      [HEADER.stalls]: stalls,
      [HEADER.exchange]: this.job.exchange,
      [HEADER.routingKey]: this.job.routingKey,
    };
    if (this.replays > 0) headers[HEADER.replays] = this.replays;
    if (this.replayedFrom !== undefined) headers[HEADER.replayedFrom] = this.replayedFrom;
    if (this.replayedTraceLinks !== undefined)
      headers[HEADER.traceLinks] = JSON.stringify(this.replayedTraceLinks);
    if (this.#note !== undefined) headers[HEADER.note] = JSON.stringify(this.#note);
    return headers;
  }
}

/**
 * Deliveries of this message that ended without an outcome: a quorum queue's `x-delivery-count`, else 1
 * for a redelivery a classic queue flags (its consumer counts further ones through a copy).
 */
export function deliveryStalls(message: ConsumeMessage): number {
  const counted = numberHeader(message.properties.headers, 'x-delivery-count');
  if (counted !== undefined) return counted;
  return message.fields.redelivered ? 1 : 0;
}

/** True for a redelivery only a classic queue's flag tells of: its count must travel in a copy to grow. */
export function needsStallCount(message: ConsumeMessage): boolean {
  return (
    message.fields.redelivered && numberHeader(message.properties.headers, 'x-delivery-count') === undefined
  );
}

/** AMQP timestamps are seconds. */
function timestampMs(timestamp: unknown): number | undefined {
  return typeof timestamp === 'number' && Number.isFinite(timestamp) && timestamp > 0
    ? timestamp * 1000
    : undefined;
}

function jsonHeader<T>(headers: Record<string, unknown> | undefined, name: string): T | undefined {
  const text = stringHeader(headers, name);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}
