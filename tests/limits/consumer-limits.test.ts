/**
 * Limits on RabbitMQ: two consumers of one queue (prefetch 10 each) sharing a limit of 3 calls in flight.
 * The dependency never sees more than 3 at once; messages held past maxPaceWaitMs wait in a delay bucket
 * without using an attempt, and every message completes, none dead-lettered.
 */
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AmqpConsumer, createConsumer } from '../../src/amqp/index.js';
import { definePolicy, MemoryDeadLetterStore, MemoryFlowStore } from '../../src/index.js';
import type { WorkerEvents } from '../../src/runtime/worker-events.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';
import { waitFor } from '../helpers/redis-server.js';

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

describe('limits in a RabbitMQ consumer', () => {
  it('holds the fleet to maxInFlight, parks what waits too long in a bucket, and completes every message', async () => {
    const queue = uniqueQueue('limits');
    const store = new MemoryFlowStore();
    const deadLetters = new MemoryDeadLetterStore();
    let running = 0;
    let maxRunning = 0;
    let calls = 0;
    const completed: WorkerEvents['completed'][] = [];
    const retries: WorkerEvents['retry'][] = [];
    const held: WorkerEvents['limit-wait'][] = [];
    const consumers: AmqpConsumer[] = [0, 1].map(() => {
      const consumer = createConsumer(
        queue,
        async (_job, ctx) => {
          await ctx.call('api', async () => {
            calls++;
            running++;
            maxRunning = Math.max(maxRunning, running);
            try {
              await new Promise((resolve) => setTimeout(resolve, 20));
            } finally {
              running--;
            }
          });
        },
        {
          connection: url,
          policy,
          deadLetters,
          concurrency: 10,
          limits: { api: { maxInFlight: 3 } },
          limitsOptions: { store, maxPaceWaitMs: 30 },
        },
      );
      consumer.events.on('completed', (e) => completed.push(e));
      consumer.events.on('retry', (e) => retries.push(e));
      consumer.events.on('limit-wait', (e) => {
        if (e.outcome === 'held') held.push(e);
      });
      return consumer;
    });
    try {
      await Promise.all(consumers.map((c) => c.ready));
      for (let n = 0; n < 60; n++)
        channel.sendToQueue(queue, Buffer.from(JSON.stringify({ n })), { persistent: true });
      await channel.waitForConfirms();
      await waitFor(() => completed.length === 60, 30_000, 'every message to complete');
      expect(maxRunning).toBe(3);
      expect(calls).toBe(60);
      expect(held.length).toBeGreaterThan(0);
      expect(retries).toEqual([]);
      expect(completed.every((e) => e.attempts === 1)).toBe(true);
      expect(await deadLetters.count(queue)).toBe(0);
    } finally {
      for (const consumer of consumers) await consumer.close();
    }
    expect((await store.limitState('api')).inFlight).toBe(0);
  });

  it('a message of the queue’s own dependency waits in the consumer for its slot, never put back; a close ends the wait', async () => {
    const queue = uniqueQueue('start-wait');
    const store = new MemoryFlowStore();
    const deadLetters = new MemoryDeadLetterStore();
    let running = 0;
    let maxRunning = 0;
    let calls = 0;
    const completed: WorkerEvents['completed'][] = [];
    const waits: WorkerEvents['limit-wait'][] = [];
    const consumerOf = () => {
      const consumer = createConsumer(
        queue,
        async (_job, ctx) => {
          await ctx.call('api', async () => {
            calls++;
            running++;
            maxRunning = Math.max(maxRunning, running);
            try {
              await new Promise((resolve) => setTimeout(resolve, 20));
            } finally {
              running--;
            }
          });
        },
        {
          connection: url,
          policy,
          deadLetters,
          concurrency: 10,
          // Every message of the queue calls api: it is the queue's own dependency.
          dependencies: { [queue]: 'api' },
          limits: { api: { maxInFlight: 3 } },
          limitsOptions: { store, maxPaceWaitMs: 30, maxStartWaitMs: 600_000 },
        },
      );
      consumer.events.on('completed', (e) => completed.push(e));
      consumer.events.on('limit-wait', (e) => waits.push(e));
      return consumer;
    };
    const consumers = [consumerOf(), consumerOf()];
    try {
      await Promise.all(consumers.map((c) => c.ready));
      for (let n = 0; n < 60; n++)
        channel.sendToQueue(queue, Buffer.from(JSON.stringify({ n })), { persistent: true });
      await channel.waitForConfirms();
      await waitFor(() => completed.length === 60, 30_000, 'every message to complete');
      expect(maxRunning).toBe(3);
      expect(waits.filter((e) => e.outcome === 'granted').length).toBeGreaterThan(0);
      expect(waits.filter((e) => e.outcome === 'held')).toEqual([]);
    } finally {
      for (const consumer of consumers) await consumer.close();
    }

    // Every slot taken elsewhere for 10 minutes: the messages wait to start, and the close does not wait
    // for them. They go back to the queue, none dead-lettered.
    await store.exchangeLimits('api', {
      holder: 'elsewhere:1',
      declared: { maxInFlight: 3 },
      leaseMs: 600_000,
      give: [],
      renew: [],
      take: [1, 2, 3].map((n) => ({ lease: `elsewhere:1:${n}`, cost: 1 })),
      probes: 1,
      ramp: { slowStartMs: 30_000, floorPerSecond: 1 },
    });
    waits.length = 0;
    const waiting = consumerOf();
    try {
      await waiting.ready;
      for (let n = 0; n < 5; n++)
        channel.sendToQueue(queue, Buffer.from(JSON.stringify({ n })), { persistent: true });
      await channel.waitForConfirms();
      await waitFor(() => waiting.inFlight === 5, 10_000, 'five messages waiting to start');
    } finally {
      await waiting.close();
    }
    expect(waits.map((e) => e.outcome)).toEqual(Array(5).fill('held'));
    expect(calls).toBe(60);
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
