import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboard } from '../../src/dashboard/handler.js';
import type { DeadLetterRecord } from '../../src/runtime/contracts.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { memoryFleet } from '../../src/status/memory-fleet.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';
import { waitFor } from '../helpers/redis-server.js';

const TOKEN = 'amqp-console-token';
const AS_SCRIPT = { headers: { authorization: `Bearer ${TOKEN}` } };

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

/** A dead letter as a RabbitMQ consumer files it: the message kept, body in base64. */
function filedByConsumer(queue: string, i: number): DeadLetterRecord {
  return {
    ...sampleDeadLetter(`m-${i}`, { queue, reason: 'breaker-open' }),
    name: 'charge',
    opts: { engine: 'amqp' },
    data: {
      body: Buffer.from(JSON.stringify({ order: i })).toString('base64'),
      properties: { contentType: 'application/json', type: 'charge' },
      headers: { tenant: 'acme' },
      exchange: 'orders',
      routingKey: 'order.created',
    },
  };
}

async function openConsole(options: { amqp?: string }) {
  const fleet = memoryFleet();
  const dashboard = createDashboard({ fleet, token: TOKEN, ...options });
  const server: Server = createServer(dashboard);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    fleet,
    async act<T>(path: string, body: unknown): Promise<T> {
      const session = await fetch(`${base}api/session`, AS_SCRIPT);
      const { csrf } = (await session.json()) as { csrf: string };
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'x-stormguard-csrf': csrf,
          cookie: `stormguard_csrf=${encodeURIComponent(csrf)}`,
        },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as T & { error?: string };
      if (!res.ok) throw new Error(`${path}: ${res.status} ${json.error}`);
      return json;
    },
    async run(id: string) {
      return (await (await fetch(`${base}api/replays/${id}`, AS_SCRIPT)).json()) as {
        status: string;
        moved: number;
        failed: number;
        failures: unknown[];
        stoppedBecause?: string;
      };
    },
    async close() {
      await new Promise((resolve) => server.close(resolve));
      await dashboard.close();
      await fleet.close();
    },
  };
}

async function bulkReplay(console_: Awaited<ReturnType<typeof openConsole>>, queue: string) {
  const preview = await console_.act<{ snapshotId: string; total: number }>(
    `api/queues/${queue}/replays/preview`,
    { filter: {}, ratePerSecond: 50 },
  );
  return console_.act<{ id: string }>(`api/queues/${queue}/replays`, {
    snapshotId: preview.snapshotId,
    ratePerSecond: 50,
    whenHealthy: false,
  });
}

describe('the console with RabbitMQ dead letters', () => {
  it('replays them to their RabbitMQ queue, body, properties and headers as they were', async () => {
    const queue = uniqueQueue('console-orders');
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    const console_ = await openConsole({ amqp: url });
    try {
      for (let i = 0; i < 3; i++)
        await console_.fleet.deadLetters.file(
          filedByConsumer(queue, i),
          { attempts: 1, deferrals: 0 },
          60_000,
        );
      const started = await bulkReplay(console_, queue);
      await waitFor(async () => (await console_.run(started.id)).status === 'done', 20_000, 'the run done');
      expect((await console_.run(started.id)).moved).toBe(3);
      const bodies: unknown[] = [];
      for (let i = 0; i < 3; i++) {
        const message = await channel.get(queue, { noAck: true });
        if (message === false) throw new Error(`message ${i} missing`);
        expect(message.properties).toMatchObject({ contentType: 'application/json', type: 'charge' });
        expect(message.properties.headers).toMatchObject({ tenant: 'acme', 'x-stormguard-replays': 1 });
        bodies.push(JSON.parse(message.content.toString('utf8')));
      }
      expect(bodies.sort((a, b) => (a as { order: number }).order - (b as { order: number }).order)).toEqual([
        { order: 0 },
        { order: 1 },
        { order: 2 },
      ]);
      expect((await console_.fleet.deadLetters.list(queue, { limit: 10 })).records).toEqual([]);
    } finally {
      await console_.close();
    }
  });

  it('without RabbitMQ, refuses them (they stay filed) instead of adding BullMQ jobs of their bytes', async () => {
    const queue = uniqueQueue('console-no-amqp');
    const console_ = await openConsole({});
    try {
      await console_.fleet.deadLetters.file(filedByConsumer(queue, 0), { attempts: 1, deferrals: 0 }, 60_000);
      const started = await bulkReplay(console_, queue);
      await waitFor(
        async () => (await console_.run(started.id)).failures.length > 0,
        20_000,
        'the record refused',
      );
      expect(JSON.stringify((await console_.run(started.id)).failures)).toMatch(/--amqp/);
      expect((await console_.fleet.deadLetters.list(queue, { limit: 10 })).records).toHaveLength(1);
    } finally {
      await console_.close();
    }
  });
});
