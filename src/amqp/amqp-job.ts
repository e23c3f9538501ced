import type { ConsumeMessage, MessageProperties } from 'amqplib';
import { HEADER, isOwnHeader, stringHeader } from './headers.js';

/**
 * A message as a stormguard processor gets it: the body as bytes, its properties and the producer's
 * headers (stormguard's own removed), where it was published, and the job's id and name as the runtime
 * knows them. `json()` parses the body.
 *
 * @example
 * const processor: AmqpProcessor = async (job, ctx) => {
 *   const order = job.json<{ id: string }>();
 *   await ctx.call('payments', () => payments.charge(order.id));
 * };
 */
export interface AmqpJob<Data = unknown> {
  /** The job's id: the same for every retry, park and redelivery of the message (not its `messageId`). */
  readonly id: string;
  /** The job's name: the message's `type` property, or the queue's name when it has none. */
  readonly name: string;
  /** The queue it was consumed from. */
  readonly queue: string;
  readonly body: Buffer;
  /** The message's properties, as the producer set them (`headers` apart). */
  readonly properties: AmqpProperties;
  /** The producer's headers (stormguard's own and its delay buckets' `x-death` entries removed). */
  readonly headers: Readonly<Record<string, unknown>>;
  /** The exchange the producer published it to ('' for the default exchange). */
  readonly exchange: string;
  /** The routing key the producer used. */
  readonly routingKey: string;
  /** The body parsed as JSON (throws on a body that is not). */
  json<T = Data>(): T;
}

/**
 * A message's properties without its headers, as they are kept in a dead letter and put back on replay.
 *
 * @example
 * const properties: AmqpProperties = { contentType: 'application/json', messageId: 'order-42' };
 */
export type AmqpProperties = Partial<Omit<Record<keyof MessageProperties, unknown>, 'headers'>> & {
  contentType?: string;
  contentEncoding?: string;
  messageId?: string;
  correlationId?: string;
  type?: string;
  appId?: string;
  timestamp?: number;
  priority?: number;
  deliveryMode?: number;
  expiration?: string;
  replyTo?: string;
  userId?: string;
};

/**
 * A message as a dead letter keeps it (the record's `data`): the body in base64, so any bytes survive
 * every store, with the properties, the producer's headers and where it was published. A replay puts
 * exactly these back.
 *
 * @example
 * const kept: AmqpMessageData = { body: 'eyJpZCI6NDJ9', properties: { contentType: 'application/json' },
 *   headers: {}, exchange: 'orders', routingKey: 'order.created' };
 */
export interface AmqpMessageData {
  /** The body, base64. */
  body: string;
  properties: AmqpProperties;
  headers: Record<string, unknown>;
  exchange: string;
  routingKey: string;
}

/** The properties amqplib reports that a producer can set (the delivery's own fields apart). */
const PROPERTY_NAMES = [
  'contentType',
  'contentEncoding',
  'deliveryMode',
  'priority',
  'correlationId',
  'replyTo',
  'expiration',
  'messageId',
  'timestamp',
  'type',
  'userId',
  'appId',
] as const;

/** The message's properties that are set, headers apart. */
export function propertiesOf(message: Pick<ConsumeMessage, 'properties'>): AmqpProperties {
  const properties: Record<string, unknown> = {};
  for (const name of PROPERTY_NAMES) {
    const value = message.properties[name];
    if (value !== undefined && value !== null) properties[name] = value;
  }
  return properties as AmqpProperties;
}

/**
 * The producer's headers: stormguard's own removed, and the `x-death` entries its delay buckets added
 * (an `x-death` from the producer's own dead-lettering is kept). Values amqplib decoded as Buffers or
 * bigints are kept as they are.
 */
export function producerHeaders(message: Pick<ConsumeMessage, 'properties'>): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(message.properties.headers ?? {})) {
    if (isOwnHeader(name)) continue;
    if (name === 'x-death' && Array.isArray(value)) {
      const theirs = value.filter((death) => !String(death?.queue ?? '').startsWith('stormguard.delay.'));
      if (theirs.length > 0) headers[name] = theirs;
      continue;
    }
    if (name.startsWith('x-first-death-') || name.startsWith('x-last-death-')) {
      if (
        String(message.properties.headers?.[name.replace(/-[a-z]+$/, '-queue')] ?? '').startsWith(
          'stormguard.delay.',
        )
      )
        continue;
    }
    if (name === 'x-delivery-count') continue;
    headers[name] = value;
  }
  return headers;
}

/** Where the producer published the message: the first delivery's fields, or what a copy carries. */
export function originOf(message: Pick<ConsumeMessage, 'properties' | 'fields'>): {
  exchange: string;
  routingKey: string;
} {
  const headers = message.properties.headers;
  return {
    exchange: stringHeader(headers, HEADER.exchange) ?? message.fields.exchange,
    routingKey: stringHeader(headers, HEADER.routingKey) ?? message.fields.routingKey,
  };
}

/** The job a processor gets for `message`. */
export function amqpJob(message: ConsumeMessage, queue: string, id: string): AmqpJob {
  const properties = propertiesOf(message);
  const { exchange, routingKey } = originOf(message);
  const body = message.content;
  // The producer's headers are sorted out only when read: a processor that succeeds without them (and
  // the success path of the consumer) pays nothing for them.
  let headers: Record<string, unknown> | undefined;
  return {
    id,
    name: jobNameOf(properties, queue),
    queue,
    body,
    properties,
    get headers() {
      headers ??= producerHeaders(message);
      return headers;
    },
    exchange,
    routingKey,
    json<T>() {
      return JSON.parse(body.toString('utf8')) as T;
    },
  };
}

/** A job's name: the message's `type`, else its queue's name. */
export function jobNameOf(properties: AmqpProperties, queue: string): string {
  return typeof properties.type === 'string' && properties.type !== '' ? properties.type : queue;
}

/** What a dead letter keeps of `job`: lossless, bytes as base64. */
export function messageData(job: AmqpJob): AmqpMessageData {
  return {
    body: job.body.toString('base64'),
    properties: { ...job.properties },
    headers: jsonSafeHeaders(job.headers),
    exchange: job.exchange,
    routingKey: job.routingKey,
  };
}

/**
 * Headers as JSON can keep them: a Buffer becomes `{ type: 'Buffer', base64 }`, a bigint its decimal
 * string, a Date its epoch ms, recursively (x-death holds arrays of tables).
 */
export function jsonSafeHeaders(headers: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) out[name] = jsonSafe(value);
  return out;
}

function jsonSafe(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return { type: 'Buffer', base64: value.toString('base64') };
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.getTime();
  if (Array.isArray(value)) return value.map(jsonSafe);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[key] = jsonSafe(inner);
    return out;
  }
  return value;
}

/** Headers kept by {@link jsonSafeHeaders} as amqplib publishes them again (Buffers restored). */
export function restoredHeaders(headers: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) out[name] = restored(value);
  return out;
}

function restored(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(restored);
  if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if (record.type === 'Buffer' && typeof record.base64 === 'string' && Object.keys(record).length === 2)
      return Buffer.from(record.base64, 'base64');
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(record)) out[key] = restored(inner);
    return out;
  }
  return value;
}
