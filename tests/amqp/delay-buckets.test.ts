/**
 * The delay buckets on the real broker: retries with delays spread over 0–3 s come back on time, and
 * their spread survives the buckets (no waves). Each message's delay is chosen here (seeded) and asked
 * for by its first attempt's error (`retryAfterMs`, over a 1 ms backoff without jitter), so the due time
 * of every retry is known without reading it from stormguard.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsumer } from '../../src/amqp/index.js';
import { definePolicy, MemoryDeadLetterStore, seededRandom, TransientError } from '../../src/index.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';
import { waitFor } from '../helpers/redis-server.js';

const MESSAGES = 40;
const MAX_DELAY_MS = 3_000;
/**
 * How late a retry may come back here. The goal is 250 ms (one bucket unit, 64 ms, plus the hops' and the
 * broker's latency; 5–102 ms on a quiet machine, printed below and by `bench/amqp`); a test bounds it
 * loosely, so that a loaded machine running the suite in parallel does not fail it, while a retry held
 * back behind a longer delay (seconds) or sent back in one rounded wave still does. Never early is exact.
 */
const LATE_MS = 1_000;

let url: string;
let admin: ChannelModel;
let channel: ConfirmChannel;

beforeAll(async () => {
  url = await ensureRabbitVhost();
  admin = await connectRabbit();
  channel = await admin.createConfirmChannel();
}, 60_000);

afterAll(async () => {
  await admin?.close();
});

function spread(xs: number[]): number {
  return Math.max(...xs) - Math.min(...xs);
}

function deviation(xs: number[]): number {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
}

describe('delay buckets on RabbitMQ', () => {
  it('brings 40 retries with random delays of 0–3 s back never early, never held back, spread as they were due', {
    timeout: 60_000,
  }, async () => {
    const queue = uniqueQueue('delays');
    const random = seededRandom(20261203);
    const delays = Array.from({ length: MESSAGES }, () => Math.floor(random() * MAX_DELAY_MS));
    const failedAt = new Map<number, number>();
    const arrivedAt = new Map<number, number>();
    const consumer = createConsumer<{ i: number }>(
      queue,
      async (job) => {
        const { i } = job.json();
        if (!failedAt.has(i)) {
          const delay = delays[i] as number;
          failedAt.set(i, Date.now());
          throw new TransientError('come back later', { retryAfterMs: delay });
        }
        arrivedAt.set(i, Date.now());
      },
      {
        connection: url,
        policy: definePolicy({
          name: 'asked',
          maxAttempts: 3,
          backoff: { type: 'fixed', delayMs: 1 },
          jitter: 'none',
        }),
        deadLetters: new MemoryDeadLetterStore(),
        // Every message in hand at once: a retry never waits behind another message.
        concurrency: MESSAGES,
      },
    );
    try {
      await consumer.ready;
      // Published 50 ms apart, as retries of a running queue come: what is measured is the buckets'
      // timing, not how fast the broker confirms forty copies published in the same millisecond.
      for (let i = 0; i < MESSAGES; i++) {
        channel.sendToQueue(queue, Buffer.from(JSON.stringify({ i })), { persistent: true });
        await channel.waitForConfirms();
        await sleep(50);
      }
      await waitFor(() => arrivedAt.size === MESSAGES, 20_000, `${MESSAGES} retries to come back`);
    } finally {
      await consumer.close();
    }

    // A retry is due no earlier than its failure plus the delay it asked for (stormguard decides after it).
    const waited = delays.map((_, i) => (arrivedAt.get(i) as number) - (failedAt.get(i) as number));
    const lateness = waited.map((wait, i) => wait - (delays[i] as number));
    process.stdout.write(
      `delay buckets: lateness ms min ${Math.min(...lateness)} max ${Math.max(...lateness)}; spread of delays ${spread(delays)}, of waits ${spread(waited)}; deviation ${deviation(delays).toFixed(0)} / ${deviation(waited).toFixed(0)}\n`,
    );
    for (const late of lateness) {
      expect(late).toBeGreaterThanOrEqual(0);
      expect(late).toBeLessThanOrEqual(LATE_MS);
    }
    // The spread survives (no waves): the waits cover the delays' range with their deviation, and
    // delays far enough apart are waited in the same order.
    expect(Math.abs(spread(waited) - spread(delays))).toBeLessThanOrEqual(LATE_MS);
    expect(Math.abs(deviation(waited) - deviation(delays))).toBeLessThanOrEqual(0.1 * deviation(delays));
    for (let a = 0; a < MESSAGES; a++)
      for (let b = 0; b < MESSAGES; b++)
        if ((delays[b] as number) - (delays[a] as number) > LATE_MS)
          expect(waited[a] as number).toBeLessThan(waited[b] as number);
  });
});
