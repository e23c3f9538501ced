/**
 * Outcomes stormguard cannot record, on a real queue: the outcome waits in the job's own record (its
 * progress) while the dead-letter store is down and is filed after, the processor never run again; a
 * record the redact hook refuses is filed in its safe form; and what BullMQ stores for a job stormguard
 * ends (failed reason, stack trace) is redacted.
 */
import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createWorker } from '../../src/bullmq/worker.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import type { DeadLetterRecord } from '../../src/runtime/contracts.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { TestBed, unfinished } from '../e2e/harness.js';
import { FlakyStore } from '../helpers/queued-job.js';
import { waitFor } from '../helpers/redis-server.js';

const bed = TestBed.perFile();

const once = definePolicy({
  name: 'once',
  maxAttempts: 1,
  maxAgeMs: '1h',
  backoff: { type: 'fixed', delayMs: 20 },
  jitter: 'none',
});

const redact = (record: DeadLetterRecord): DeadLetterRecord => ({
  ...record,
  lastError: {
    ...record.lastError,
    message: record.lastError.message.replace(/token=\w+/g, 'token=[redacted]'),
  },
});

async function failedJobs(queueName: string): Promise<Job[]> {
  const queue = bed.queue(queueName);
  return queue.getFailed(0, -1);
}

describe('a worker whose dead-letter store refuses', () => {
  it('files every job once the store is back, the outcome kept in the job meanwhile, each processor run once, none failed unfiled', async () => {
    const queueName = `outage-${Date.now().toString(36)}`;
    const store = new FlakyStore();
    store.down = true;
    let runs = 0;
    const worker = createWorker(
      queueName,
      async () => {
        runs += 1;
        throw new TransientError('503 from the payment provider');
      },
      {
        connection: bed.connection,
        ...(bed.queueBackend ? { backend: bed.queueBackend } : {}),
        policy: once,
        deadLetters: store,
        concurrency: 4,
        bookkeepingBackoff: { firstDelayMs: 100, maxDelayMs: 800 },
        // Delayed jobs are fetched within 0.2 s, not BullMQ's default 5 s of an idle fetch.
        workerOptions: { ...bed.bullPrefixOption, drainDelay: 0.2 },
        onWarning: () => {},
      },
    );
    worker.on('error', () => {});
    let unfiled = 0;
    worker.events.on('unfiled', () => unfiled++);
    const queue = bed.queue(queueName);
    await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'charge', data: { order: i } })));
    // Down until every job's filing was refused 4 times (0.1 + 0.2 + 0.4 + 0.8 s of backoff).
    await waitFor(() => store.filings >= 80, 10_000, 'filings refused while the store is down');
    store.down = false;
    await waitFor(async () => (await store.count(queueName)) === 20, 15_000, 'every job filed');
    await waitFor(async () => (await unfinished(queue)) === 0, 10_000, 'every job ended');
    expect(runs).toBe(20);
    expect(unfiled).toBe(0);
    const failed = await failedJobs(queueName);
    // Every job BullMQ holds as failed is a filed dead letter; none failed because its outcome was lost.
    expect(failed.map((j) => j.failedReason.startsWith('dead-lettered (max-attempts)'))).toEqual(
      failed.map(() => true),
    );
    await worker.close();
  }, 40_000);

  it('files the safe form of a record the redact hook refuses, once, and hands BullMQ no raw text', async () => {
    const queueName = `hook-${Date.now().toString(36)}`;
    const store = new MemoryDeadLetterStore({
      redact: (record) => {
        if ((record.data as { card?: string }).card)
          throw new TypeError(`no card rule for ${JSON.stringify(record.data)}`);
        return redact(record);
      },
    });
    let runs = 0;
    const worker = createWorker(
      queueName,
      async () => {
        runs += 1;
        throw new TransientError('503 token=s3cr3t');
      },
      {
        connection: bed.connection,
        ...(bed.queueBackend ? { backend: bed.queueBackend } : {}),
        policy: once,
        deadLetters: store,
        workerOptions: bed.bullPrefixOption,
      },
    );
    const errors: Error[] = [];
    worker.on('error', (error) => errors.push(error));
    const queue = bed.queue(queueName);
    await queue.add('charge', { card: '4111 1111 1111 1111' });
    await queue.add('refund', { order: 7 });
    await waitFor(async () => (await store.count(queueName)) === 2, 10_000, 'both records filed');
    await waitFor(async () => (await failedJobs(queueName)).length === 2, 10_000, 'both jobs ended');
    expect(runs).toBe(2);
    const { records } = await store.list(queueName, { limit: 10 });
    expect(records.find((r) => r.name === 'charge')?.data).toEqual({
      stormguard: 'withheld',
      why: 'the redaction hook failed (TypeError)',
    });
    const failed = await failedJobs(queueName);
    const handed = failed.map((j) => `${j.failedReason}\n${(j.stacktrace ?? []).join('\n')}`).join('\n');
    expect(handed).toContain('token=[redacted]');
    expect(handed).not.toContain('s3cr3t');
    const reported = errors.map((e) => `${e.message}\n${e.stack}`).join('\n');
    expect(reported).not.toContain('4111');
    await worker.close();
  });
});
