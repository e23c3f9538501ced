import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { seededRandom } from '../common/random.js';
import { PermanentError } from '../errors/permanent-error.js';
import { definePolicy } from '../policy/define-policy.js';
import type { WorkerEvents } from './types.js';
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
        throw new Error('the attempt state is not read: it arrived with the job');
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
    expect(reported).toEqual(['dead-letter write refused', 'Missing lock for job 7. moveToDelayed']);
  });
});
