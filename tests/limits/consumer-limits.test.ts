/**
 * Limits on RabbitMQ: two consumers of one queue (prefetch 10 each) sharing a limit of 3 calls in flight.
 * The dependency never sees more than 3 at once; messages held past maxPaceWaitMs wait in a delay bucket
 * without using an attempt, and every message completes, none dead-lettered. When the limited dependency
 * is the queue's own, messages wait in the consumer for their slot instead, and a close puts them back.
 */
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AmqpConsumer, type AmqpConsumerOptions, createConsumer } from '../../src/amqp/index.js';
import { definePolicy, MemoryDeadLetterStore, MemoryFlowStore } from '../../src/index.js';
import type { WorkerEvents } from '../../src/runtime/worker-events.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';
import { waitFor } from '../helpers/redis-server.js';
import { takeSlotsElsewhere } from './slots-elsewhere.js';

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

const policy = definePolicy({
  name: 'limits-amqp',
  maxAttempts: 3,
  backoff: { type: 'fixed', delayMs: 100 },
  jitter: 'none',
  maxAgeMs: '2m',
});

/** A dependency that counts its calls and the most running at once (each takes 20 ms). */
class Api {
  running = 0;
  maxRunning = 0;
  calls = 0;
  async call(): Promise<void> {
    this.calls++;
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      this.running--;
    }
  }
}

/** What the consumers of one test share, and a consumer of `queue` (concurrency 10) whose one call is `api`. */
function fleet(queue: string, options: Partial<AmqpConsumerOptions>) {
  const store = new MemoryFlowStore();
  const deadLetters = new MemoryDeadLetterStore();
  const api = new Api();
  const completed: WorkerEvents['completed'][] = [];
  const retries: WorkerEvents['retry'][] = [];
  const waits: WorkerEvents['limit-wait'][] = [];
  const consumer = (): AmqpConsumer => {
    const created = createConsumer(queue, (_job, ctx) => ctx.call('api', () => api.call()), {
      connection: url,
      policy,
      deadLetters,
      concurrency: 10,
      limits: { api: { maxInFlight: 3 } },
      ...options,
      limitsOptions: { store, ...options.limitsOptions },
    });
    created.events.on('completed', (e) => completed.push(e));
    created.events.on('retry', (e) => retries.push(e));
    created.events.on('limit-wait', (e) => waits.push(e));
    return created;
  };
  /** Two consumers of the queue take `count` messages to completion, then close. */
  const completeWithTwo = async (count: number): Promise<void> => {
    const consumers = [consumer(), consumer()];
    try {
      await Promise.all(consumers.map((c) => c.ready));
      await publish(queue, count);
      await waitFor(() => completed.length === count, 30_000, 'every message to complete');
    } finally {
      for (const c of consumers) await c.close();
    }
  };
  return { store, deadLetters, api, completed, retries, waits, consumer, completeWithTwo };
}

async function publish(queue: string, count: number): Promise<void> {
  for (let n = 0; n < count; n++)
    channel.sendToQueue(queue, Buffer.from(JSON.stringify({ n })), { persistent: true });
  await channel.waitForConfirms();
}

describe('limits in a RabbitMQ consumer', () => {
  it('holds the fleet to maxInFlight, parks what waits too long in a bucket, and completes every message', async () => {
    const queue = uniqueQueue('limits');
    const { store, deadLetters, api, completed, retries, waits, completeWithTwo } = fleet(queue, {
      limitsOptions: { maxPaceWaitMs: 30 },
    });
    await completeWithTwo(60);
    expect(api.maxRunning).toBe(3);
    expect(api.calls).toBe(60);
    expect(waits.filter((e) => e.outcome === 'held').length).toBeGreaterThan(0);
    expect(retries).toEqual([]);
    expect(completed.every((e) => e.attempts === 1)).toBe(true);
    expect(await deadLetters.count(queue)).toBe(0);
    expect((await store.limitState('api')).inFlight).toBe(0);
  });

  it('a message of the queue’s own dependency waits in the consumer for its slot, never put back; a close ends the wait', async () => {
    const queue = uniqueQueue('start-wait');
    const { store, deadLetters, api, waits, consumer, completeWithTwo } = fleet(queue, {
      // Every message of the queue calls api: it is the queue's own dependency.
      dependencies: { [queue]: 'api' },
      limitsOptions: { maxPaceWaitMs: 30, maxStartWaitMs: 600_000 },
    });
    await completeWithTwo(60);
    expect(api.maxRunning).toBe(3);
    expect(waits.filter((e) => e.outcome === 'granted').length).toBeGreaterThan(0);
    expect(waits.filter((e) => e.outcome === 'held')).toEqual([]);

    // Every slot taken elsewhere for 10 minutes: the messages wait to start, and the close does not wait
    // for them. They go back to the queue, none dead-lettered.
    await takeSlotsElsewhere(store, 'api', 3);
    waits.length = 0;
    const waiting = consumer();
    try {
      await waiting.ready;
      await publish(queue, 5);
      await waitFor(() => waiting.inFlight === 5, 10_000, 'five messages waiting to start');
    } finally {
      await waiting.close();
    }
    expect(waits.map((e) => e.outcome)).toEqual(Array(5).fill('held'));
    expect(api.calls).toBe(60);
    await waitFor(
      async () => (await channel.checkQueue(queue)).messageCount === 5,
      10_000,
      'the five messages back in the queue',
    );
    // Each once: a held message is put back as a copy, and its delivery acked before the channel closes
    // (were the ack overtaken by the close, the delivery would come back too, and run twice).
    const back: number[] = [];
    for (let m = await channel.get(queue, { noAck: true }); m; m = await channel.get(queue, { noAck: true }))
      back.push((JSON.parse(m.content.toString()) as { n: number }).n);
    expect(back.sort()).toEqual([0, 1, 2, 3, 4]);
    expect(await deadLetters.count(queue)).toBe(0);
  });
});
