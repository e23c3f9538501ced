import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { amqpReplayQueue, createConsumer, importDeadLetters } from '../../src/amqp/index.js';
import {
  definePolicy,
  idempotencyGuard,
  MemoryDeadLetterStore,
  MemoryIdempotencyStore,
} from '../../src/index.js';
import { redisFleet } from '../../src/redis/fleet.js';
import type { StoredDeadLetter } from '../../src/runtime/contracts.js';
import { createReplayRun, runReplay } from '../../src/runtime/replay/replay-runs.js';
import { IpcProcess } from '../helpers/ipc-process.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

// The import and the replay run each in a process of their own, SIGKILLed midway (wherever it was: between
// a filing and its ack, between a broker's confirm and the record's removal), then run again here to the
// end: every message filed once, and processed once by the work queue's consumer.

const COUNT = 600;
const CHILD = new URL('./fixtures/import-replay-child.ts', import.meta.url);

let url: string;
let server: TestRedis;
let redis: Redis;
let admin: ChannelModel;
let channel: ConfirmChannel;

beforeAll(async () => {
  url = await ensureRabbitVhost();
  server = await TestRedis.start();
  redis = new Redis(server.connection);
  admin = await connectRabbit();
  channel = await admin.createConfirmChannel();
});

afterAll(async () => {
  await admin?.close();
  redis?.disconnect();
  await server?.close();
});

/** Runs `message` in a child and SIGKILLs it once its progress says `killAt`. */
async function killedMidway(
  message: Record<string, unknown> & { type: string },
  reached: (progress: Record<string, unknown>) => boolean,
): Promise<void> {
  const child = new IpcProcess(CHILD, []);
  try {
    child.send(message);
    for (;;) {
      const progress = await child.next('progress', 30_000);
      if (reached(progress)) break;
    }
  } finally {
    await child.kill();
  }
}

const bodyOf = (record: StoredDeadLetter) =>
  Buffer.from((record.data as { body: string }).body, 'base64').toString('utf8');

describe('an import and a replay SIGKILLed midway, then run again', () => {
  it('files every message once and the consumer processes each once', async () => {
    const work = uniqueQueue('killed');
    const dlq = `${work}.dlq`;
    await channel.assertQueue(work, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await channel.assertQueue(dlq, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    const seconds = Math.floor(Date.now() / 1000);
    for (let i = 0; i < COUNT; i++)
      channel.sendToQueue(dlq, Buffer.from(JSON.stringify({ i })), {
        persistent: true,
        ...(i % 2 === 0 ? { messageId: `m-${i}` } : {}),
        headers: {
          'x-death': [
            {
              count: 1,
              reason: 'rejected',
              queue: work,
              time: { '!': 'timestamp', value: seconds },
              exchange: '',
            },
          ],
        },
      });
    await channel.waitForConfirms();
    const prefix = 'killed';
    const fleet = redisFleet({ redis, prefix });
    const common = { url, redisUrl: server.url, prefix, queue: work };

    // The import, killed once it has handled 200 (up to 50 more in hand, some filed and not acked).
    await killedMidway({ type: 'import', from: dlq, ...common }, (p) => Number(p.handled) >= 200);
    const filedBeforeKill = await fleet.deadLetters.count(work);
    expect(filedBeforeKill).toBeGreaterThanOrEqual(200);
    const rerun = await importDeadLetters({
      connection: url,
      from: dlq,
      queue: work,
      store: fleet.deadLetters,
    });
    expect(rerun).toMatchObject({ stoppedBecause: 'drained', left: 0 });
    expect(rerun.imported + filedBeforeKill).toBe(COUNT);
    const records: StoredDeadLetter[] = [];
    for (let cursor: string | undefined, first = true; first || cursor; first = false) {
      const page = await fleet.deadLetters.list(work, { limit: 500, ...(cursor ? { cursor } : {}) });
      records.push(...page.records);
      cursor = page.next;
    }
    const filed = records.map(bodyOf).sort();
    expect(filed).toHaveLength(COUNT);
    expect(new Set(filed).size).toBe(COUNT);

    // The replay run, killed once it has saved 200 moved; its lease lapses, and it is run again here.
    const leaseMs = 1_000;
    const run = await createReplayRun({ store: fleet.deadLetters, runs: fleet.replayRuns }, work, {
      ratePerSecond: 500,
    });
    await killedMidway({ type: 'replay', runId: run.id, leaseMs, ...common }, (p) => Number(p.moved) >= 200);
    const stopped = await fleet.replayRuns.getRun(run.id);
    expect(stopped?.status).toBe('running');
    await waitFor(
      () => Date.now() > (stopped?.leaseUntilMs ?? 0),
      leaseMs * 3,
      'the killed run’s lease to lapse',
    );
    const publisher = await connectRabbit();
    const finished = await runReplay(
      {
        store: fleet.deadLetters,
        runs: fleet.replayRuns,
        queue: work,
        jobs: amqpReplayQueue(await publisher.createConfirmChannel(), work),
      },
      run.id,
    );
    await publisher.close();
    expect(finished?.status).toBe('done');
    expect(await fleet.deadLetters.count(work)).toBe(0);

    // At most the records between the last save and the kill went out twice; the consumer does each once.
    const processed: string[] = [];
    let deliveries = 0;
    const consumer = createConsumer(
      work,
      async (job) => {
        processed.push(job.body.toString('utf8'));
      },
      {
        connection: url,
        policy: definePolicy({ name: 'killed', maxAttempts: 3, backoff: { type: 'fixed', delayMs: 100 } }),
        deadLetters: new MemoryDeadLetterStore(),
        concurrency: 50,
        idempotency: {
          guard: idempotencyGuard({ store: new MemoryIdempotencyStore(), ttlMs: 30 * 86_400_000 }),
          key: (job) => {
            deliveries++;
            return job.properties.messageId;
          },
        },
      },
    );
    await waitFor(
      async () => processed.length >= COUNT && (await channel.checkQueue(work)).messageCount === 0,
      20_000,
      'every replayed message consumed',
    );
    await consumer.close();
    expect(processed.sort()).toEqual(filed);
    expect(deliveries).toBeGreaterThanOrEqual(COUNT);
    expect(deliveries).toBeLessThanOrEqual(COUNT + 25);
  }, 40_000);
});
