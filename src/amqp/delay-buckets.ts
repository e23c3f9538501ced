import type { Channel } from 'amqplib';
import { HEADER } from './headers.js';

/**
 * Delays without plugins. RabbitMQ has no native delay, and a per-message TTL expires only at a queue's
 * head, so one queue of mixed delays holds a short delay back behind a long one. stormguard keeps one
 * queue per delay length instead, each a power of two of {@link DELAY_UNIT_MS} (64 ms, 128 ms, … about
 * 50 days), with a queue-wide TTL, so every queue expires in the order it was filled. An expired message
 * dead-letters back to its work queue (the routing key it was published with), where the consumer runs it
 * if it is due, or sends it to the next bucket for what is left.
 *
 * A delay is split across buckets as its binary digits are (binary hops): 1 300 ms is 1 024 + 256 + then
 * 64 for the 20 ms left. So a copy never runs before its due time and at most one unit (64 ms) plus the
 * hops' latency after it; and two delays that differ by a unit or more arrive apart: jitter survives
 * instead of collapsing into the waves one rounded bucket would make.
 *
 * The buckets are quorum queues: from RabbitMQ 3.10 a quorum queue dead-letters at least once (a classic
 * queue may lose a message it dead-letters if the broker restarts), with `reject-publish` overflow, which
 * that strategy requires.
 */
export const DELAY_UNIT_MS = 64;

/** Buckets 0 … 26: 64 ms … 64 ms × 2^26 (about 49.7 days). A longer delay takes the largest bucket again. */
export const BUCKET_COUNT = 27;

/** The headers exchange that routes a copy to its bucket by {@link HEADER.bucket}. */
export const DELAY_EXCHANGE = 'stormguard.delay';

/** The name of bucket `index`. */
export function bucketQueue(index: number): string {
  return `stormguard.delay.${bucketTtlMs(index)}ms`;
}

/** How long a copy waits in bucket `index`, ms. */
export function bucketTtlMs(index: number): number {
  return DELAY_UNIT_MS * 2 ** index;
}

/**
 * The bucket for the next hop of a copy due in `remainingMs` (> 0): the largest whose wait fits in what is
 * left, or the smallest when less than a unit is left (a copy never runs early, so it waits the unit out).
 *
 * @example
 * nextBucket(1_300); // 4 (1 024 ms)
 * nextBucket(20); // 0 (64 ms)
 */
export function nextBucket(remainingMs: number): number {
  if (!(remainingMs >= DELAY_UNIT_MS)) return 0;
  const index = Math.floor(Math.log2(remainingMs / DELAY_UNIT_MS));
  // Guard the float: the bucket's wait must fit in what is left.
  const fitted = bucketTtlMs(index) > remainingMs ? index - 1 : index;
  return Math.min(fitted, BUCKET_COUNT - 1);
}

/**
 * Every hop a delay takes when each hop lasts exactly its bucket's wait: the plan the consumer follows one
 * hop at a time (each hop is planned again from the clock when the copy comes back).
 *
 * @example
 * delayHops(1_300); // [4, 2, 0]: 1 024 + 256 + 64 = 1 344 ms
 */
export function delayHops(delayMs: number): number[] {
  const hops: number[] = [];
  let left = delayMs;
  while (left > 0) {
    const bucket = nextBucket(left);
    hops.push(bucket);
    left -= bucketTtlMs(bucket);
  }
  return hops;
}

/**
 * Declares the delay exchange and every bucket on `channel` (idempotent: the same arguments each time).
 * A broker that refuses them (a bucket declared before with other arguments) closes the channel, and the
 * error says which.
 */
export async function declareDelayBuckets(channel: Channel): Promise<void> {
  await channel.assertExchange(DELAY_EXCHANGE, 'headers', { durable: true });
  for (let index = 0; index < BUCKET_COUNT; index++) {
    const queue = bucketQueue(index);
    await channel.assertQueue(queue, {
      durable: true,
      arguments: {
        'x-queue-type': 'quorum',
        'x-message-ttl': bucketTtlMs(index),
        // The default exchange, with the copy's own routing key: its work queue's name.
        'x-dead-letter-exchange': '',
        'x-dead-letter-strategy': 'at-least-once',
        'x-overflow': 'reject-publish',
      },
    });
    await channel.bindQueue(queue, DELAY_EXCHANGE, '', {
      'x-match': 'all',
      [HEADER.bucket]: String(index),
    });
  }
}
