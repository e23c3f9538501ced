import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AmqpJob, createConsumer, failedQueueOf } from '../../src/amqp/index.js';
import { definePolicy, MemoryDeadLetterStore, PermanentError } from '../../src/index.js';
import { createMetrics } from '../../src/prometheus/index.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';
import { waitFor } from '../helpers/redis-server.js';

const fast = definePolicy({
  name: 'fast',
  maxAttempts: 3,
  backoff: { type: 'fixed', delayMs: 300 },
  jitter: 'none',
});

let url: string;
let admin: ChannelModel;
let channel: ConfirmChannel;

beforeAll(async () => {
  url = await ensureRabbitVhost();
  admin = await connectRabbit();
  channel = await admin.createConfirmChannel();
});

afterAll(async () => {
  await admin?.close();
});

async function publish(queue: string, body: unknown, options: Record<string, unknown> = {}): Promise<void> {
  await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  channel.sendToQueue(queue, Buffer.from(JSON.stringify(body)), { persistent: true, ...options });
  await channel.waitForConfirms();
}

async function depth(queue: string): Promise<number> {
  return (await channel.checkQueue(queue)).messageCount;
}

describe('createConsumer on RabbitMQ', { timeout: 60_000 }, () => {
  it('runs each message once and acks it', async () => {
    const queue = uniqueQueue('orders');
    for (let i = 0; i < 20; i++) await publish(queue, { i });
    const seen: number[] = [];
    const consumer = createConsumer<{ i: number }>(
      queue,
      async (job) => {
        seen.push(job.json().i);
      },
      { connection: url, policy: fast, deadLetters: new MemoryDeadLetterStore(), concurrency: 5 },
    );
    await consumer.ready;
    await waitFor(() => seen.length === 20, 10_000, '20 messages processed');
    await consumer.close();
    expect([...seen].sort((a, b) => a - b)).toEqual([...Array(20).keys()]);
    expect(await depth(queue)).toBe(0);
  });

  it('retries through the delay buckets, never before the due time and at most 250 ms after it', async () => {
    const queue = uniqueQueue('retry');
    await publish(queue, { n: 1 });
    const runs: number[] = [];
    const consumer = createConsumer(
      queue,
      async () => {
        runs.push(Date.now());
        if (runs.length < 3) throw Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' });
      },
      { connection: url, policy: fast, deadLetters: new MemoryDeadLetterStore() },
    );
    await waitFor(() => runs.length === 3, 10_000, 'three runs');
    await consumer.close();
    const gaps = runs.slice(1).map((at, i) => at - (runs[i] as number));
    for (const gap of gaps) {
      expect(gap).toBeGreaterThanOrEqual(300);
      expect(gap).toBeLessThanOrEqual(300 + 250);
    }
    expect(await depth(queue)).toBe(0);
  });

  it('dead-letters a permanent failure with its body, properties and headers kept losslessly', async () => {
    const queue = uniqueQueue('dlq');
    const body = Buffer.from([0, 255, 1, 254, 10]);
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    channel.sendToQueue(queue, body, {
      persistent: true,
      contentType: 'application/octet-stream',
      messageId: 'm-1',
      type: 'charge',
      headers: { tenant: 'acme', raw: Buffer.from('bytes') },
    });
    await channel.waitForConfirms();
    const store = new MemoryDeadLetterStore();
    let seen: AmqpJob | undefined;
    const consumer = createConsumer(
      queue,
      async (job) => {
        seen = job;
        throw new PermanentError('card declined');
      },
      { connection: url, policy: fast, deadLetters: store, dependencies: { charge: 'payments' } },
    );
    await waitFor(
      async () => (await store.list(queue, { limit: 10 })).records.length === 1,
      30_000,
      'one dead letter',
    );
    await consumer.close();
    const [record] = (await store.list(queue, { limit: 10 })).records;
    expect(seen?.name).toBe('charge');
    expect(record).toMatchObject({
      name: 'charge',
      reason: 'permanent',
      dependency: 'payments',
      opts: { engine: 'amqp' },
    });
    const data = (
      record as {
        data: { body: string; properties: Record<string, unknown>; headers: Record<string, unknown> };
      }
    ).data;
    expect(Buffer.from(data.body, 'base64').equals(body)).toBe(true);
    expect(data.properties).toMatchObject({
      contentType: 'application/octet-stream',
      messageId: 'm-1',
      type: 'charge',
    });
    expect(data.headers).toEqual({
      tenant: 'acme',
      raw: { type: 'Buffer', base64: Buffer.from('bytes').toString('base64') },
    });
    expect(await depth(queue)).toBe(0);
  });

  it('moves a terminal message to the failed queue when nothing files dead letters', async () => {
    const queue = uniqueQueue('nodlq');
    await publish(queue, { n: 1 });
    const attempts = new MemoryDeadLetterStore();
    let runs = 0;
    const consumer = createConsumer(
      queue,
      async () => {
        runs++;
        throw new PermanentError('bad input');
      },
      { connection: url, policy: fast, deadLetters: false, attemptState: attempts },
    );
    await waitFor(
      async () => runs === 1 && (await depth(queue)) === 0,
      10_000,
      'the message leaves the queue',
    );
    await consumer.close();
    await waitFor(async () => (await depth(failedQueueOf(queue))) === 1, 5_000, 'one failed message');
    const failed = await channel.get(failedQueueOf(queue), { noAck: true });
    if (failed === false) throw new Error('the failed queue is empty');
    expect(failed.properties.headers?.['x-stormguard-failed-reason']).toMatch(/bad input/);
  });

  it('dead-letters a message that keeps killing its consumer after maxRedeliveries', async () => {
    const queue = uniqueQueue('poison');
    await publish(queue, { poison: true });
    const store = new MemoryDeadLetterStore();
    let runs = 0;
    // The first consumer takes the message and loses its connection mid-message: the broker redelivers it.
    const own = await connectRabbit();
    const dying = createConsumer(
      queue,
      async () => {
        runs++;
        await own.close();
        await new Promise(() => {});
      },
      { connection: own, policy: fast, deadLetters: store, maxRedeliveries: 0 },
    );
    dying.events.on('error', () => {});
    await waitFor(() => runs === 1, 30_000, 'the first run');
    const next = createConsumer(
      queue,
      async () => {
        runs++;
      },
      { connection: url, policy: fast, deadLetters: store, maxRedeliveries: 0 },
    );
    await waitFor(
      async () => (await store.list(queue, { limit: 10 })).records.length === 1,
      30_000,
      'the dead letter',
    );
    await next.close();
    expect(runs).toBe(1);
    const [record] = (await store.list(queue, { limit: 10 })).records;
    expect(record?.reason).toBe('max-attempts');
    expect(await depth(queue)).toBe(0);
  });

  it('feeds the same metrics as a BullMQ worker', async () => {
    const queue = uniqueQueue('metrics');
    await publish(queue, { ok: true }, { type: 'charge' });
    await publish(queue, { ok: false }, { type: 'charge' });
    const registry = new Registry();
    const metrics = createMetrics({ registry });
    const consumer = createConsumer<{ ok: boolean }>(
      queue,
      async (job) => {
        if (!job.json().ok) throw new PermanentError('bad');
      },
      {
        connection: url,
        policy: fast,
        deadLetters: new MemoryDeadLetterStore(),
        dependencies: { charge: 'payments' },
      },
    );
    metrics.observeWorker(consumer);
    await waitFor(async () => (await depth(queue)) === 0, 10_000, 'both messages handled');
    await consumer.close();
    const text = await registry.metrics();
    expect(text).toMatch(/stormguard_dead_letters_total\{[^}]*reason="permanent"[^}]*\} 1/);
    expect(text).toMatch(/stormguard_jobs_completed_total\{[^}]*\} 1/);
  });
});
