import type { ChannelModel } from 'amqplib';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { maskCredentials } from './mask-credentials.js';

/**
 * Refuses a RabbitMQ URL that is not one (bad input, exit 2), before anything connects: it must be
 * `amqp://` or `amqps://`, with a host.
 *
 * @example
 * checkAmqpUrl('amqp://guest:guest@127.0.0.1:5672/orders', '--amqp');
 */
export function checkAmqpUrl(url: string, flag: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !/^amqps?:$/.test(parsed.protocol) || parsed.hostname === '')
    throw new InvalidInputError(
      `${flag}: "${maskCredentials(url, { value: true })}" is not an AMQP URL; write it like amqp://user:password@host:5672/vhost`,
    );
}

/**
 * Connects to RabbitMQ (amqplib, loaded here: commands that never name `--amqp` never need it). A broker
 * that cannot be reached is a one-line error naming the URL with its password masked.
 *
 * @example
 * const connection = await connectAmqp('amqp://guest:guest@127.0.0.1:5672/orders');
 */
export async function connectAmqp(url: string): Promise<ChannelModel> {
  const { default: amqplib } = await import('amqplib');
  try {
    const connection = await amqplib.connect(url);
    // A connection error also closes its channels, which is how the command hears of it.
    connection.on('error', () => {});
    return connection;
  } catch (error) {
    throw new Error(
      `cannot reach RabbitMQ at ${maskCredentials(url, { value: true })}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
