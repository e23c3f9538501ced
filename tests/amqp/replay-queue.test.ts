import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { amqpReplayQueue } from '../../src/amqp/index.js';
import type { StoredDeadLetter } from '../../src/runtime/contracts.js';
import { describeReplayQueue, type HeldReplayJob } from '../../src/runtime/replay/replay-queue.case.js';
import type { ReplayQueue } from '../../src/runtime/replay/replay-queue.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';

// The replay port's conformance suite on RabbitMQ. The suite files records whose data is a BullMQ job's
// (plain JSON); a RabbitMQ consumer files a kept message instead (the body in base64, its properties and
// headers). So the harness hands amqpReplayQueue each record as a consumer of the queue would have filed it
// (the JSON as the body, the name as the `type` property, the original job id in a header of the
// producer's), and reads what the queue holds with basic.get, by its own means: RabbitMQ cannot read a
// message back through the port, and does not refuse a duplicate.

const ORIGINAL_JOB_ID = 'test-original-job-id';

let admin: ChannelModel;

beforeAll(async () => {
  await ensureRabbitVhost();
  admin = await connectRabbit();
});

afterAll(async () => {
  await admin?.close();
});

/** The record as a RabbitMQ consumer would have filed it: the same job, its data a kept message. */
function asFiledByConsumer(record: StoredDeadLetter, queue: string): StoredDeadLetter {
  return {
    ...record,
    opts: { engine: 'amqp' },
    data: {
      body: Buffer.from(JSON.stringify(record.data)).toString('base64'),
      properties: { type: record.name, contentType: 'application/json' },
      headers: { [ORIGINAL_JOB_ID]: record.jobId },
      exchange: '',
      routingKey: queue,
    },
  };
}

/** The port on `channel`, fed records as a consumer files them. */
function port(channel: ConfirmChannel, queue: string): ReplayQueue {
  const jobs = amqpReplayQueue(channel, queue);
  return {
    replayKey: (record) => jobs.replayKey(record),
    putBack: (record, claim, options) => jobs.putBack(asFiledByConsumer(record, queue), claim, options),
  };
}

describeReplayQueue(
  'amqpReplayQueue',
  async () => {
    const queue = uniqueQueue('replay-port');
    const channel = await admin.createConfirmChannel();
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    // The same queue through a channel that is gone: every publish fails, unconfirmed.
    const closed = await admin.createConfirmChannel();
    await closed.close();
    const reader = await admin.createChannel();
    const held: HeldReplayJob[] = [];
    return {
      jobs: port(channel, queue),
      down: port(closed, queue),
      // Every message the queue has held so far: each read takes it, so what was read is kept here.
      held: async () => {
        for (;;) {
          const message = await reader.get(queue, { noAck: true });
          if (message === false) break;
          const headers = message.properties.headers ?? {};
          held.push({
            id: String(headers['x-stormguard-job-id']),
            name: String(message.properties.type),
            data: JSON.parse(message.content.toString('utf8')),
            origin: {
              originalJobId: String(headers[ORIGINAL_JOB_ID]),
              replays: Number(headers['x-stormguard-replays']),
              recordId: String(headers['x-stormguard-replayed-from']),
            },
          });
        }
        return [...held];
      },
      close: async () => {
        await channel.deleteQueue(queue);
        await channel.close();
        await reader.close();
      },
    };
  },
  { deduplicates: false },
);

describe('amqpReplayQueue on a queue that does not exist', () => {
  it('rejects (RabbitMQ returns the mandatory message) instead of confirming it into nothing', async () => {
    const channel = await admin.createConfirmChannel();
    const queue = uniqueQueue('gone');
    const record: StoredDeadLetter = {
      id: '1',
      queue,
      jobId: 'j-1',
      createdAt: 1,
      name: 'charge',
      data: {
        body: Buffer.from('{}').toString('base64'),
        properties: {},
        headers: {},
        exchange: '',
        routingKey: queue,
      },
      opts: { engine: 'amqp' },
      reason: 'permanent',
      detail: 'declined',
      lastError: { name: 'Error', message: 'declined', classification: { retryable: false, reason: 'test' } },
      attemptsMade: 1,
      dependency: 'payments',
      deadLetteredAt: 2,
      replays: 0,
    };
    await expect(
      amqpReplayQueue(channel, queue).putBack(
        record,
        { jobId: 'j-1-r1.1', claimedAt: 3 },
        { dedupTtlMs: 1_000 },
      ),
    ).rejects.toThrow(/does not exist/);
    await channel.close();
  });
});
