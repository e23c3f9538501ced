import { createServer, type Server, Socket } from 'node:net';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsumer } from '../../src/amqp/index.js';
import { definePolicy, MemoryDeadLetterStore } from '../../src/index.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';
import { waitFor } from '../helpers/redis-server.js';

/**
 * A TCP proxy in front of the broker: cutting its sockets drops the consumer's connection the way a
 * network or a broker restart does, without touching anyone else's connections in the run's vhost.
 */
async function brokerProxy(): Promise<{ port: number; cut(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(5672, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    cut() {
      const count = sockets.size;
      for (const socket of sockets) socket.destroy();
      return count;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

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

describe('a consumer whose connection drops', { timeout: 60_000 }, () => {
  it('reconnects, consumes again, and runs every message: the ones in hand at the cut come back as redeliveries', async () => {
    const queue = uniqueQueue('reconnect');
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    const total = 60;
    for (let i = 0; i < total; i++)
      channel.sendToQueue(queue, Buffer.from(JSON.stringify({ i })), { persistent: true });
    await channel.waitForConfirms();

    const proxy = await brokerProxy();
    const done = new Set<number>();
    const runs: number[] = [];
    const connected: number[] = [];
    const consumer = createConsumer<{ i: number }>(
      queue,
      async (job) => {
        const { i } = job.json();
        runs.push(i);
        await new Promise((resolve) => setTimeout(resolve, 10));
        done.add(i);
      },
      {
        connection: url.replace('127.0.0.1:5672', `127.0.0.1:${proxy.port}`),
        policy: definePolicy({ name: 'once', maxAttempts: 3 }),
        deadLetters: new MemoryDeadLetterStore(),
        concurrency: 5,
        maxRedeliveries: 3,
        reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
      },
    );
    consumer.events.on('connected', ({ attempt }) => connected.push(attempt));
    // The drop is reported ("Unexpected close", then acks on the dead channel): expected here.
    consumer.events.on('error', () => {});
    try {
      await waitFor(() => done.size >= 15, 20_000, '15 messages done');
      expect(proxy.cut()).toBeGreaterThan(0);
      await waitFor(
        async () => done.size === total && (await channel.checkQueue(queue)).messageCount === 0,
        30_000,
        'every message done after the reconnect',
      );
    } finally {
      await consumer.close();
      await proxy.close();
    }
    expect(connected.length).toBeGreaterThanOrEqual(2);
    expect([...done].sort((a, b) => a - b)).toEqual([...Array(total).keys()]);
    // At least once: what was in hand at the cut (at most the prefetch) may have run twice, nothing more.
    expect(runs.length - total).toBeLessThanOrEqual(5);
  });
});
