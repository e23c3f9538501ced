import { createHash } from 'node:crypto';
import type { ConsumeMessage } from 'amqplib';
import type { DeadLetterRecord } from '../runtime/contracts.js';
import { jobNameOf, jsonSafeHeaders, producerHeaders, propertiesOf } from './amqp-job.js';
import { HEADER, numberHeader, stringHeader } from './headers.js';

/**
 * One entry of a message's `x-death` header, as RabbitMQ writes it each time it dead-letters the message
 * (newest first; an entry's `count` grows when the same queue dead-letters it again for the same reason).
 *
 * @example
 * const death: XDeath = { queue: 'orders', reason: 'rejected', count: 1, timeMs: 1_700_000_000_000,
 *   exchange: 'orders', routingKeys: ['order.created'] };
 */
export interface XDeath {
  queue: string;
  /** `rejected`, `expired`, `maxlen` or `delivery_limit` (RabbitMQ 3.10); another broker's word is kept as it is. */
  reason: string;
  count: number;
  /** When it was first dead-lettered from that queue for that reason (RabbitMQ keeps seconds). */
  timeMs?: number;
  /** The exchange it had been published to, and the routing keys it had. */
  exchange?: string;
  routingKeys: string[];
}

/** What a dead-lettered message says about itself: its `x-death` entries, newest first (none when absent). */
export function xDeathsOf(headers: Readonly<Record<string, unknown>> | undefined): XDeath[] {
  const raw = headers?.['x-death'];
  if (!Array.isArray(raw)) return [];
  const deaths: XDeath[] = [];
  for (const entry of raw) {
    if (typeof entry !== 'object' || entry === null) continue;
    const table = entry as Record<string, unknown>;
    const timeMs = secondsToMs(table.time);
    const keys = table['routing-keys'];
    deaths.push({
      queue: text(table.queue) ?? '',
      reason: text(table.reason) ?? 'unknown',
      count: Math.max(1, Math.trunc(Number(table.count ?? 1)) || 1),
      ...(timeMs === undefined ? {} : { timeMs }),
      ...(text(table.exchange) === undefined ? {} : { exchange: text(table.exchange) }),
      routingKeys: Array.isArray(keys) ? keys.map((k) => text(k) ?? '').filter((k) => k !== '') : [],
    });
  }
  return deaths;
}

/** An AMQP timestamp (seconds) as amqplib decodes it (`{ '!': 'timestamp', value }`, or a plain number), in ms. */
function secondsToMs(value: unknown): number | undefined {
  const seconds =
    typeof value === 'object' && value !== null && '!' in value
      ? Number((value as { value?: unknown }).value)
      : typeof value === 'bigint'
        ? Number(value)
        : value instanceof Date
          ? value.getTime() / 1000
          : typeof value === 'number'
            ? value
            : Number.NaN;
  return Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds * 1000) : undefined;
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}

/**
 * The hash a message is known by in an import: SHA-256 over its body, its properties and its headers
 * (`x-death` included), everything RabbitMQ keeps unchanged while the message waits in a queue. The one
 * header a redelivery changes, a quorum queue's `x-delivery-count`, is left out, so a message an
 * interrupted import took and did not ack hashes the same when it comes back.
 */
export function messageHash(message: Pick<ConsumeMessage, 'content' | 'properties'>): string {
  const { 'x-delivery-count': _count, ...headers } = message.properties.headers ?? {};
  const canonical = canonicalJson({
    body: message.content.toString('base64'),
    properties: propertiesOf(message),
    headers: jsonSafeHeaders(headers),
  });
  return createHash('sha256').update(canonical).digest('hex');
}

/** JSON with every object's keys sorted: the same value gives the same text in any process. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** A producer's `messageId` this long or longer is left out of the job id (the hash alone names the message). */
const MAX_MESSAGE_ID_IN_JOB_ID = 200;

/**
 * The job id an imported message is filed under: `sha256-<hash>` for a message without a `messageId`, and
 * `<messageId>#<16 hex digits of the hash>` for one with it. The hash is in both because a `messageId`
 * alone does not name one dead-lettering: a replay republishes a message with its `messageId`, and a
 * message replayed and dead-lettered again must be filed again, not taken for the first one.
 */
export function importJobId(messageId: string | undefined, hash: string): string {
  if (messageId === undefined || messageId === '' || messageId.length >= MAX_MESSAGE_ID_IN_JOB_ID)
    return `sha256-${hash}`;
  return `${messageId}#${hash.slice(0, 16)}`;
}

/** RabbitMQ's dead-letter reasons, as a record's detail says them. */
const WHY: Readonly<Record<string, (queue: string) => string>> = {
  rejected: (queue) => `rejected by a consumer of "${queue}" (nack or reject without requeue)`,
  expired: (queue) => `expired in "${queue}" (message or queue TTL)`,
  maxlen: (queue) => `dropped from "${queue}" over its length limit`,
  delivery_limit: (queue) => `delivered more times than the delivery limit of "${queue}"`,
};

/**
 * Whether replaying the work is likely to help, by RabbitMQ's reason: a consumer refused it (`rejected`,
 * `delivery_limit`) or only the queue's limits dropped it (`expired`, `maxlen`).
 */
const RETRYABLE: ReadonlySet<string> = new Set(['expired', 'maxlen']);

/** The one line a record's detail says: why the broker dead-lettered the message, from its newest `x-death`. */
export function brokerDetail(deaths: readonly XDeath[], from: string): string {
  const last = deaths[0];
  if (!last)
    return `found in the dead-letter queue "${from}" with no x-death header (published there directly)`;
  const why = WHY[last.reason]?.(last.queue) ?? `dead-lettered from "${last.queue}" (${last.reason})`;
  return `RabbitMQ dead-lettered it: ${why}${last.count > 1 ? `, ${last.count} times` : ''}; imported from "${from}"`;
}

/**
 * What {@link importedRecord} needs besides the message.
 *
 * @example
 * const context: ImportContext = { queue: 'orders', from: 'orders.dlx', dependencies: { charge: 'payments' }, nowMs: Date.now() };
 */
export interface ImportContext {
  /** The queue the record is filed under in the store (the work queue a replay puts it back on). */
  queue: string;
  /** The dead-letter queue it is taken from. */
  from: string;
  /** Job name → dependency, as the consumer maps them; a name with no entry is its own dependency. */
  dependencies: Readonly<Record<string, string>>;
  /** When it is imported (epoch ms): the record's dead-letter time. */
  nowMs: number;
}

/**
 * The dead-letter record of a message RabbitMQ dead-lettered, as a stormguard consumer of `queue` would
 * have filed it (`data` the kept message, `opts` `{ engine: 'amqp' }`, the job's name its `type` or the
 * queue's name), with reason `broker-dead-lettered` and a detail that says RabbitMQ's reason. The kept
 * headers include `x-death`. Its identity (job id and creation time) is derived from the message alone,
 * so an import run again files it under the same one (see {@link importJobId}).
 *
 * - `createdAt`: stormguard's own creation header, else the `timestamp` property, else the first
 *   `x-death` time, else 0 (nothing in the message says);
 * - `deadLetteredAt`: the import's time, not the broker's: retention counts from it, so a queue with a
 *   `maxAgeMs` never evicts what an import of old messages just filed (the broker's first time is in
 *   `firstFailedAt`, and every entry's in the kept `x-death`);
 * - `attemptsMade`: how many times RabbitMQ dead-lettered it, over every `x-death` entry.
 */
export function importedRecord(message: ConsumeMessage, context: ImportContext): DeadLetterRecord {
  const headers = message.properties.headers ?? {};
  const properties = propertiesOf(message);
  const deaths = xDeathsOf(headers);
  const last = deaths[0];
  const name = jobNameOf(properties, context.queue);
  const detail = brokerDetail(deaths, context.from);
  const firstDeathMs = deaths
    .map((death) => death.timeMs)
    .filter((t): t is number => t !== undefined)
    .sort((a, b) => a - b)[0];
  const createdAt =
    numberHeader(headers, HEADER.createdAt) ?? secondsToMs(message.properties.timestamp) ?? firstDeathMs ?? 0;
  const replayedFrom = stringHeader(headers, HEADER.replayedFrom);
  const record: DeadLetterRecord = {
    queue: context.queue,
    jobId: importJobId(properties.messageId, messageHash(message)),
    createdAt,
    name,
    data: {
      body: message.content.toString('base64'),
      properties,
      headers: jsonSafeHeaders(producerHeaders(message)),
      exchange: stringHeader(headers, HEADER.exchange) ?? last?.exchange ?? message.fields.exchange,
      routingKey:
        stringHeader(headers, HEADER.routingKey) ?? last?.routingKeys[0] ?? message.fields.routingKey,
    },
    opts: { engine: 'amqp' },
    reason: 'broker-dead-lettered',
    detail,
    lastError: {
      name: 'BrokerDeadLetter',
      message: detail,
      classification: {
        retryable: last !== undefined && RETRYABLE.has(last.reason),
        reason: `x-death: ${last?.reason ?? 'none'}`,
      },
    },
    attemptsMade: deaths.reduce((sum, death) => sum + death.count, 0),
    dependency: context.dependencies[name] ?? name,
    deadLetteredAt: context.nowMs,
    replays: numberHeader(headers, HEADER.replays) ?? 0,
  };
  if (firstDeathMs !== undefined) record.firstFailedAt = firstDeathMs;
  if (replayedFrom !== undefined) record.replayedFrom = replayedFrom;
  return record;
}
