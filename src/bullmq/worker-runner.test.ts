import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { seededRandom } from '../common/random.js';
import { PermanentError } from '../errors/permanent-error.js';
import { definePolicy } from '../policy/define-policy.js';
import type { DeadLetterRecord, WorkerEvents } from './types.js';
import { JobRunner } from './worker-runner.js';

describe('JobRunner when its bookkeeping fails', () => {
  it('hands BullMQ a DelayedError, never the store error, when neither the dead letter nor the delay can be written', async () => {
    const reported: string[] = [];
    const runner = new JobRunner<unknown, unknown, string>({
      queue: 'index',
      processor: async () => {
        throw new PermanentError('no such document');
      },
      policy: definePolicy({ maxAttempts: 3 }),
      budget: undefined,
      breaker: undefined,
      dependencies: {},
      deadLetters: () => ({
        name: 'index-dlq',
        add: async () => {
          throw new Error('dead-letter write refused');
        },
      }),
      idempotency: undefined,
      clock: new FakeClock(0),
      random: seededRandom(1),
      events: new EventBus<WorkerEvents>(),
      warn: () => {},
      internalError: (error) => reported.push((error as Error).message),
      locate: () => {
        throw new Error('attempt state write refused');
      },
    });
    // A job whose lock is gone: BullMQ refuses to move it (and would refuse to fail it too).
    const job = {
      id: '7',
      name: 'index',
      data: {},
      opts: {},
      timestamp: 0,
      moveToDelayed: async () => {
        throw new Error('Missing lock for job 7. moveToDelayed');
      },
    } as unknown as Job;
    runner.arrived(job, undefined);
    await expect(runner.run(job, 'token')).rejects.toMatchObject({ name: 'DelayedError' });
    // The dead-lettered mark is written before the record, so its refusal is what is reported.
    expect(reported).toEqual(['attempt state write refused', 'Missing lock for job 7. moveToDelayed']);
  });
});

describe('JobRunner given a job its state says was dead-lettered', () => {
  it('files the record rebuilt from the job and the state, and fails the job without running it', async () => {
    const filed: DeadLetterRecord[] = [];
    let runs = 0;
    const events = new EventBus<WorkerEvents>();
    const reasons: string[] = [];
    events.on('dead-letter', (e) => reasons.push(`${e.dependency}:${e.reason}`));
    const runner = new JobRunner<unknown, unknown, string>({
      queue: 'index',
      processor: async () => {
        runs++;
      },
      policy: definePolicy({ maxAttempts: 3 }),
      budget: undefined,
      breaker: undefined,
      dependencies: {},
      deadLetters: () => ({ name: 'index-dlq', add: async (record) => filed.push(record) }),
      idempotency: undefined,
      clock: new FakeClock(9_000),
      random: seededRandom(1),
      events,
      warn: () => {},
      internalError: (error) => {
        throw error;
      },
      locate: () => {
        throw new Error('the attempt state is not read or written: it arrived with the job');
      },
    });
    const job = { id: '8', name: 'index', data: { docId: 8 }, opts: {}, timestamp: 100 } as unknown as Job;
    const deadLettered = {
      reason: 'max-attempts',
      detail: '3 of 3 attempts used',
      lastError: {
        name: 'TransientError',
        message: 'search timed out',
        classification: { retryable: true, reason: 'transient-error' },
      },
      attemptsMade: 3,
      dependency: 'search',
      idempotencyKey: 'doc-8',
      at: 5_000,
    };
    runner.arrived(job, JSON.stringify({ attempts: 3, deferrals: 0, firstFailedAt: 1_000, deadLettered }));
    await expect(runner.run(job, 'token')).rejects.toMatchObject({
      name: 'UnrecoverableError',
      message: expect.stringMatching(
        /^dead-lettered to "index-dlq" \(max-attempts\): 3 of 3 attempts used; last error: search timed out$/,
      ),
    });
    expect(runs).toBe(0);
    expect(filed).toEqual([
      {
        jobId: '8',
        queue: 'index',
        name: 'index',
        data: { docId: 8 },
        opts: {},
        reason: 'max-attempts',
        detail: '3 of 3 attempts used',
        lastError: deadLettered.lastError,
        attemptsMade: 3,
        dependency: 'search',
        idempotencyKey: 'doc-8',
        createdAt: 100,
        firstFailedAt: 1_000,
        deadLetteredAt: 5_000,
        replays: 0,
      },
    ]);
    expect(reasons).toEqual(['search:max-attempts']);
  });
});
