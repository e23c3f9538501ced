import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/program.js';
import { redisFleet } from '../../src/redis/fleet.js';
import { createReplayRun } from '../../src/runtime/replay/replay-runs.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

// `stormguard dlq import` and `dlq replay --amqp`, run in-process as a user runs them, against the run's
// RabbitMQ vhost and a redis-server of this file's own.

let url: string;
let redisServer: TestRedis;
let redis: Redis;
let admin: ChannelModel;
let channel: ConfirmChannel;

beforeAll(async () => {
  url = await ensureRabbitVhost();
  redisServer = await TestRedis.start();
  redis = new Redis(redisServer.connection);
  admin = await connectRabbit();
  channel = await admin.createConfirmChannel();
});

afterAll(async () => {
  await admin?.close();
  redis?.disconnect();
  await redisServer?.close();
});

async function stormguard(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

/**
 * A work queue and a dead-letter queue holding `count` messages as RabbitMQ leaves expired ones: bodies
 * `{ n }`, with an `x-death` header (published there directly, as the broker would have).
 */
async function deadLettered(count: number): Promise<{ work: string; dlq: string }> {
  const work = uniqueQueue('cli-work');
  const dlq = `${work}.dlq`;
  await channel.assertQueue(work, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await channel.assertQueue(dlq, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  // Dead-lettered long ago: the import files them all the same (retention counts from the import).
  const seconds = DEAD_AT / 1000;
  for (let n = 0; n < count; n++)
    channel.sendToQueue(dlq, Buffer.from(JSON.stringify({ n })), {
      persistent: true,
      type: 'invoice',
      headers: {
        'x-death': [
          {
            count: 1,
            reason: 'expired',
            queue: work,
            time: { '!': 'timestamp', value: seconds },
            exchange: 'billing',
            'routing-keys': ['invoice.due'],
          },
        ],
      },
    });
  await channel.waitForConfirms();
  return { work, dlq };
}

/** Every message in `queue` now, taken (their bodies' `n`, sorted). */
async function drain(queue: string): Promise<number[]> {
  const seen: number[] = [];
  for (;;) {
    const message = await channel.get(queue, { noAck: true });
    if (message === false) return seen.sort((a, b) => a - b);
    seen.push((JSON.parse(message.content.toString('utf8')) as { n: number }).n);
  }
}

const DEAD_AT = 1_600_000_000_000;

const range = (count: number) => [...Array(count).keys()];

/** `stormguard dlq import` from `dlq` into `work`'s dead letters on the test Redis, with `extra` flags. */
function importing(dlq: string, work: string, ...extra: string[]) {
  return stormguard(
    'dlq',
    'import',
    '--amqp',
    url,
    '--from',
    dlq,
    '--queue',
    work,
    '--redis',
    redisServer.url,
    ...extra,
  );
}

describe('stormguard dlq import', () => {
  it('files every message of the dead-letter queue, prints its report, and dlq list shows them', async () => {
    const { work, dlq } = await deadLettered(30);
    const imported = await importing(dlq, work, '--json');
    expect(imported.stderr).toBe('');
    expect(imported.code).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({
      queue: work,
      from: dlq,
      imported: 30,
      duplicates: 0,
      stoppedBecause: 'drained',
      left: 0,
    });
    expect((await channel.checkQueue(dlq)).messageCount).toBe(0);

    const listed = await stormguard(
      'dlq',
      'list',
      work,
      '--redis',
      redisServer.url,
      '--json',
      '--limit',
      '100',
    );
    const listing = JSON.parse(listed.stdout) as { total: number; records: Record<string, unknown>[] };
    expect(listing.total).toBe(30);
    expect(listing.records[0]).toMatchObject({
      name: 'invoice',
      reason: 'broker-dead-lettered',
      detail: expect.stringContaining(`expired in "${work}"`),
      data: { exchange: 'billing', routingKey: 'invoice.due' },
      firstFailedAt: DEAD_AT,
      deadLetteredAt: expect.any(Number),
    });
    expect(listing.records[0]?.deadLetteredAt).toBeGreaterThan(Date.now() - 60_000);

    // Run again: the queue is empty, nothing is filed.
    const again = await importing(dlq, work);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^imported 0 message\(s\) from ".*" as dead letters of ".*"/);
    expect(again.stdout).toMatch(/is empty/);
  });

  it('stops at --limit, and says how many are left', async () => {
    const { work, dlq } = await deadLettered(12);
    const result = await importing(dlq, work, '--limit', '5', '--prefetch', '2');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/imported 5 message\(s\)/);
    // The broker may still be taking back a message it had out to the import: at least 5 are counted.
    expect(result.stdout).toMatch(/stopped at --limit; at least [5-7] message\(s\) left/);
    await waitFor(async () => (await channel.checkQueue(dlq)).messageCount === 7, 5_000, '7 left in the DLQ');
  });

  it.each([
    [['--from', 'x', '--queue', 'y'], /--amqp/],
    [['--amqp', 'http://127.0.0.1:5672/', '--from', 'x', '--queue', 'y'], /--amqp: .* is not an AMQP URL/],
    [['--amqp', 'amqp://guest:s3cret@127.0.0.1:5672/', '--queue', 'y'], /--from/],
    [['--amqp', 'amqp://127.0.0.1/', '--from', 'x', '--queue', 'y', '--limit', '0'], /--limit: "0"/],
    [['--amqp', 'amqp://127.0.0.1/', '--from', 'x', '--queue', 'y', '--prefetch', '70000'], /--prefetch/],
  ])('refuses bad input with exit 2: %j', async (args, message) => {
    const result = await stormguard('dlq', 'import', ...args, '--redis', redisServer.url);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toMatch(/s3cret/);
    expect(result.code).toBe(2);
  });

  it('refuses a dead-letter queue that does not exist with exit 2, naming it', async () => {
    const missing = uniqueQueue('no-such-dlq');
    const result = await stormguard(
      'dlq',
      'import',
      '--amqp',
      url,
      '--from',
      missing,
      '--queue',
      'orders',
      '--redis',
      redisServer.url,
    );
    expect(result.stderr).toMatch(new RegExp(`the dead-letter queue "${missing}" does not exist`));
    expect(result.code).toBe(2);
  });
});

describe('stormguard dlq replay --amqp', () => {
  it('replays imported records to the work queue at a rate, and a stored run too', async () => {
    const { work, dlq } = await deadLettered(20);
    const imported = await importing(dlq, work);
    expect(imported.code).toBe(0);

    // Without --amqp, the records are not BullMQ's to replay.
    const wrongEngine = await stormguard('dlq', 'replay', work, '--redis', redisServer.url);
    expect(wrongEngine.stderr).toMatch(/replay them with --amqp <url>/);
    expect(wrongEngine.code).toBe(2);

    const startedAt = Date.now();
    const replayed = await stormguard(
      'dlq',
      'replay',
      work,
      '--amqp',
      url,
      '--redis',
      redisServer.url,
      '--rate',
      '40/s',
      '--limit',
      '12',
      '--json',
    );
    const elapsedMs = Date.now() - startedAt;
    expect(replayed.code).toBe(0);
    expect(JSON.parse(replayed.stdout)).toMatchObject({ matched: 12, failed: [] });
    expect(JSON.parse(replayed.stdout).moved).toHaveLength(12);
    // 12 at 40/s: the first at once, the next eleven 25 ms apart.
    expect(elapsedMs).toBeGreaterThanOrEqual(11 * 25);
    expect(await drain(work)).toEqual(range(12));

    // The other 8 through a stored run (as the console starts one), gone on with from the CLI.
    const fleet = redisFleet({ redis });
    const stored = await createReplayRun({ store: fleet.deadLetters, runs: fleet.replayRuns }, work, {
      ratePerSecond: 100,
    });
    const resumed = await stormguard(
      'dlq',
      'replay',
      work,
      '--amqp',
      url,
      '--redis',
      redisServer.url,
      '--run',
      stored.id,
      '--json',
    );
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'done', moved: 8, failed: 0 });
    expect(await drain(work)).toEqual(range(20).slice(12));
    expect(await fleet.deadLetters.count(work)).toBe(0);
  });

  it('refuses a work queue that does not exist on the broker with exit 2 (RabbitMQ would confirm into nothing)', async () => {
    const { work, dlq } = await deadLettered(1);
    await importing(dlq, work);
    await channel.deleteQueue(work);
    const result = await stormguard('dlq', 'replay', work, '--amqp', url, '--redis', redisServer.url);
    expect(result.stderr).toMatch(new RegExp(`queue "${work}" does not exist on this broker`));
    expect(result.code).toBe(2);
    expect(await redisFleet({ redis }).deadLetters.count(work)).toBe(1);
  });
});
