import amqplib, { type ChannelModel, type Options } from 'amqplib';
import { InvalidInputError } from '../errors/invalid-input-error.js';

/**
 * How a consumer reaches RabbitMQ: a URL or amqplib's connect options (the consumer connects, and
 * reconnects when the connection drops), or an open amqplib connection (used as it is: when it closes,
 * the consumer cannot open it again, and closes with an error that says so).
 *
 * @example
 * const connection: AmqpConnection = 'amqp://guest:guest@127.0.0.1:5672/orders';
 */
export type AmqpConnection = string | Options.Connect | ChannelModel;

/**
 * Reconnection after a dropped connection: exponential backoff from `initialDelayMs` to `maxDelayMs`
 * with full jitter, for ever (a consumer keeps trying while its process lives).
 *
 * @example
 * const reconnect: ReconnectOptions = { initialDelayMs: 100, maxDelayMs: 10_000 };
 */
export interface ReconnectOptions {
  /** Default 100. */
  initialDelayMs?: number;
  /** Default 10 000. */
  maxDelayMs?: number;
}

/** True for an open amqplib connection (rather than a URL or connect options). */
export function isChannelModel(connection: AmqpConnection): connection is ChannelModel {
  return (
    typeof connection === 'object' &&
    connection !== null &&
    typeof (connection as Partial<ChannelModel>).createConfirmChannel === 'function'
  );
}

/** Opens a connection for `connection`: connects for a URL or options, hands back an open one. */
export async function openConnection(connection: AmqpConnection): Promise<ChannelModel> {
  if (isChannelModel(connection)) return connection;
  return amqplib.connect(connection);
}

/** The wait before reconnect attempt `attempt` (1-based): full jitter over an exponential ceiling. */
export function reconnectDelayMs(attempt: number, options: ReconnectOptions, random: () => number): number {
  const initial = options.initialDelayMs ?? 100;
  const max = options.maxDelayMs ?? 10_000;
  const ceiling = Math.min(max, initial * 2 ** Math.min(attempt - 1, 30));
  return Math.max(initial, Math.round(random() * ceiling));
}

/** Refuses a connection option that is none of the three forms, naming the forms. */
export function checkConnection(connection: unknown, who: string): void {
  if (typeof connection === 'string' && connection !== '') return;
  if (typeof connection === 'object' && connection !== null) return;
  throw new InvalidInputError(
    `${who}: options.connection is required: an AMQP URL ("amqp://user:pass@host:5672/vhost"), amqplib connect options, or an open amqplib connection`,
  );
}
