import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { amqpReplayQueue, createConsumer, importDeadLetters } from '../../src/amqp/index.js';
import {
  type DeadLetterStore,
  definePolicy,
  idempotencyGuard,
  MemoryDeadLetterStore,
  MemoryIdempotencyStore,
  MemoryReplayRunStore,
  type StoredDeadLetter,
} from '../../src/index.js';
import { replayDeadLetters } from '../../src/runtime/replay/replay.js';
import type { ReplayQueue } from '../../src/runtime/replay/replay-queue.js';
import { createReplayRun, runReplay } from '../../src/runtime/replay/replay-runs.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';
import { waitFor } from '../helpers/redis-server.js';

// A native dead-letter queue of 1 000 messages (and two that are identical in every byte), moved into
// stormguard's store by an import stopped twice (an abort, then a connection killed between filing and
// acking), replayed to the work queue at a set rate by a run stopped twice (an abort, then a connection
// killed between the broker's confirm and the record's removal), and consumed: every body filed once and
// processed once.

const COUNT = 1_000;
const RATE = 400;

let admin: ChannelModel;
let channel: ConfirmChannel;

beforeAll(async () => {
  await ensureRabbitVhost();
  admin = await connectRabbit();
  channel = await admin.createConfirmChannel();
});

afterAll(async () => {
  await admin?.close();
});

/** The body of message `i` (the two twins share one). */
const bodyOf = (i: number | 'twin') => JSON.stringify(i === 'twin' ? { twin: true } : { i });

/** What every body should come to: each once, the twins' body twice. */
function expectedBodies(): Map<string, number> {
  const expected = new Map<string, number>();
  for (let i = 0; i < COUNT; i++) expected.set(bodyOf(i), 1);
  expected.set(bodyOf('twin'), 2);
  return expected;
}

function tally(bodies: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const body of bodies) counts.set(body, (counts.get(body) ?? 0) + 1);
  return counts;
}

/** A store whose `file` is `file` (everything else the store's own, bound to it). */
function withFile(store: MemoryDeadLetterStore, file: DeadLetterStore['file']): DeadLetterStore {
  return new Proxy(store, {
    get(target, name) {
      if (name === 'file') return file;
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function allRecords(store: DeadLetterStore, queue: string): Promise<StoredDeadLetter[]> {
  const records: StoredDeadLetter[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list(queue, { limit: 500, ...(cursor ? { cursor } : {}) });
    records.push(...page.records);
    cursor = page.next;
  } while (cursor);
  return records;
}

const bodyOfRecord = (record: StoredDeadLetter) =>
  Buffer.from((record.data as { body: string }).body, 'base64').toString('utf8');

describe('a native dead-letter queue, imported and replayed', () => {
  const work = uniqueQueue('orders');
  const dlq = `${work}.dlq`;
  const store = new MemoryDeadLetterStore();

  beforeAll(async () => {
    await channel.assertQueue(dlq, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await channel.assertQueue(work, {
      durable: true,
      arguments: { 'x-queue-type': 'quorum', 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': dlq },
    });
    for (let i = 0; i < COUNT; i++)
      channel.sendToQueue(work, Buffer.from(bodyOf(i)), {
        persistent: true,
        contentType: 'application/json',
        // A third with the producer's id, a third with a type, a third with neither.
        ...(i % 3 === 0 ? { messageId: `order-${i}` } : {}),
        ...(i % 3 === 1 ? { type: 'charge' } : {}),
        headers: { tenant: 'acme' },
      });
    // Two messages identical in every byte: the import must file both.
    for (let twin = 0; twin < 2; twin++) channel.sendToQueue(work, Buffer.from(bodyOf('twin')));
    await channel.waitForConfirms();
    // A consumer rejects every one: RabbitMQ dead-letters them into the DLQ with x-death (reason rejected).
    const rejecting = await admin.createChannel();
    await rejecting.prefetch(200);
    await rejecting.consume(work, (message) => message && rejecting.nack(message, false, false));
    await waitFor(
      async () => (await channel.checkQueue(dlq)).messageCount === COUNT + 2,
      20_000,
      'every message dead-lettered',
    );
    await rejecting.close();
  }, 30_000);

  it('imports every message once, through an abort and a connection killed between filing and acking', async () => {
    // 1. Aborted after 150 messages: in-hand ones are filed and acked, the rest stays.
    const stop = new AbortController();
    const aborted = await importDeadLetters({
      connection: await ensureRabbitVhost(),
      from: dlq,
      queue: work,
      store,
      prefetch: 20,
      signal: stop.signal,
      onProgress: (p) => {
        if (p.handled >= 150) stop.abort();
      },
    });
    expect(aborted.stoppedBecause).toBe('aborted');
    expect(aborted.imported).toBeGreaterThanOrEqual(150);
    expect(aborted.imported + aborted.left).toBeLessThanOrEqual(COUNT + 2);
    await waitFor(
      async () => (await channel.checkQueue(dlq)).messageCount === COUNT + 2 - aborted.imported,
      5_000,
      'the messages the import did not file back in the DLQ',
    );
    expect(await store.count(work)).toBe(aborted.imported);

    // 2. Killed: the connection dies right after the 300th record of this run is filed, before its ack.
    const doomed = await connectRabbit();
    let filed = 0;
    const killing = withFile(store, async (record, state, ttlMs) => {
      const filing = await store.file(record, state, ttlMs);
      if (++filed === 300) await doomed.close();
      return filing;
    });
    // Progress is reported after each ack, so its last count is what the killed run acked.
    let ackedBeforeKill = 0;
    await expect(
      importDeadLetters({
        connection: doomed,
        from: dlq,
        queue: work,
        store: killing,
        prefetch: 50,
        onProgress: (p) => {
          ackedBeforeKill = p.handled;
        },
      }),
    ).rejects.toThrow(/run the import again/);
    const afterKill = await store.count(work);
    expect(afterKill).toBeGreaterThanOrEqual(aborted.imported + 300);
    // Everything not acked goes back to the DLQ; a quorum queue takes it back a moment after the close.
    const leftAfterKill = COUNT + 2 - aborted.imported - ackedBeforeKill;
    await waitFor(
      async () => (await channel.checkQueue(dlq)).messageCount === leftAfterKill,
      5_000,
      'the messages the killed import did not ack back in the DLQ',
    );
    // Filed and not acked: in the store and still in the DLQ.
    expect(afterKill + leftAfterKill).toBeGreaterThan(COUNT + 2);

    // 3. Run again to the end: what the killed run filed is acked, nothing is filed twice.
    const progress: number[] = [];
    const finished = await importDeadLetters({
      connection: await ensureRabbitVhost(),
      from: dlq,
      queue: work,
      store,
      onProgress: (p) => progress.push(p.handled),
    });
    expect(finished).toMatchObject({ stoppedBecause: 'drained', left: 0 });
    expect(finished.duplicates).toBeGreaterThanOrEqual(1);
    expect(finished.handled).toBe(leftAfterKill);
    expect(progress.at(-1)).toBe(finished.handled);
    expect(finished.ratePerSecond).toBeGreaterThan(0);

    const records = await allRecords(store, work);
    expect(records).toHaveLength(COUNT + 2);
    expect(tally(records.map(bodyOfRecord))).toEqual(expectedBodies());

    const byBody = new Map(records.map((r) => [bodyOfRecord(r), r]));
    expect(byBody.get(bodyOf(3))).toMatchObject({
      queue: work,
      jobId: expect.stringMatching(/^order-3#[0-9a-f]{16}$/),
      name: work,
      reason: 'broker-dead-lettered',
      detail: expect.stringContaining(`rejected by a consumer of "${work}"`),
      opts: { engine: 'amqp' },
      attemptsMade: 1,
      data: {
        properties: { messageId: 'order-3', contentType: 'application/json' },
        headers: {
          tenant: 'acme',
          'x-death': [expect.objectContaining({ reason: 'rejected', queue: work, count: 1 })],
        },
        routingKey: work,
      },
    });
    expect(byBody.get(bodyOf(4))).toMatchObject({
      jobId: expect.stringMatching(/^sha256-[0-9a-f]{64}$/),
      name: 'charge',
      dependency: 'charge',
    });
    expect((await channel.checkQueue(dlq)).messageCount).toBe(0);
  }, 40_000);

  it('replays them at the set rate through a run stopped twice, and the consumer does each once', async () => {
    const runs = new MemoryReplayRunStore();
    const run = await createReplayRun({ store, runs }, work, { ratePerSecond: RATE });
    expect(run.total).toBe(COUNT + 2);

    // 1. Aborted once 200 are moved.
    const replayer = await connectRabbit();
    const publish = await replayer.createConfirmChannel();
    const stop = new AbortController();
    const first = await runReplay(
      { store, runs, queue: work, jobs: amqpReplayQueue(publish, work) },
      run.id,
      {
        signal: stop.signal,
        onProgress: (r) => {
          if (r.moved >= 200) stop.abort();
        },
      },
    );
    expect(first).toMatchObject({ status: 'pending', stoppedBecause: 'interrupted' });

    // 2. Killed: the connection dies after the broker confirmed the 100th message of this run, before the
    // record is removed. The next put backs fail (the channel is gone) and the run stops, left pending.
    const doomed = await connectRabbit();
    const doomedJobs = amqpReplayQueue(await doomed.createConfirmChannel(), work);
    let putBacks = 0;
    const killing: ReplayQueue = {
      replayKey: (record) => doomedJobs.replayKey(record),
      async putBack(record, claim, options) {
        const id = await doomedJobs.putBack(record, claim, options);
        if (++putBacks === 100) {
          await doomed.close();
          throw new Error('killed after the confirm');
        }
        return id;
      },
    };
    const second = await runReplay({ store, runs, queue: work, jobs: killing }, run.id);
    expect(second?.status).toBe('pending');
    expect(second?.stoppedBecause).toMatch(/3 records in a row failed to move/);

    // 3. Run again: it goes on from its cursor, at its rate.
    const startedAt = Date.now();
    const movedBefore = second?.moved ?? 0;
    const third = await runReplay({ store, runs, queue: work, jobs: amqpReplayQueue(publish, work) }, run.id);
    const elapsedMs = Date.now() - startedAt;
    expect(third?.status).toBe('done');
    const movedNow = (third?.moved ?? 0) - movedBefore;
    expect(movedNow).toBeGreaterThan(500);
    expect(elapsedMs).toBeGreaterThanOrEqual(((movedNow - 1) / RATE) * 1000 * 0.95);

    // 4. The three records the failures left claimed (the killed one among them, already published once)
    // move with the next replay.
    const rest = await replayDeadLetters({ store, queue: work, jobs: amqpReplayQueue(publish, work) });
    expect(rest.moved).toHaveLength(3);
    expect(await store.count(work)).toBe(0);
    await replayer.close();

    // The work queue's consumer, with an idempotency key: each body is processed once.
    const processed: string[] = [];
    const consumer = createConsumer(
      work,
      async (job) => {
        processed.push(job.body.toString('utf8'));
      },
      {
        connection: await ensureRabbitVhost(),
        policy: definePolicy({ name: 'replayed', maxAttempts: 3, backoff: { type: 'fixed', delayMs: 100 } }),
        deadLetters: new MemoryDeadLetterStore(),
        concurrency: 50,
        idempotency: {
          guard: idempotencyGuard({ store: new MemoryIdempotencyStore(), ttlMs: 30 * 86_400_000 }),
          key: (job) => job.properties.messageId,
        },
      },
    );
    await waitFor(
      async () => processed.length >= COUNT + 2 && (await channel.checkQueue(work)).messageCount === 0,
      20_000,
      'every replayed message consumed',
    );
    await consumer.close();
    expect(tally(processed)).toEqual(expectedBodies());
  }, 40_000);
});
