/**
 * What only a worker on Redis does: with no dead-letter store given, it files into a Redis one on its own
 * connection. Runs on the Redis backend only, whatever STORMGUARD_TEST_BACKEND says.
 */
import { describe, expect, it } from 'vitest';
import { createWorker } from '../../src/bullmq/worker.js';
import { PermanentError } from '../../src/errors/permanent-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { recordEvents, TestBed } from '../e2e/harness.js';
import { waitFor } from '../helpers/redis-server.js';

const bed = TestBed.perFile({ backend: 'redis' });

const fast = definePolicy({
  name: 'fast',
  maxAttempts: 3,
  backoff: { type: 'fixed', delayMs: 20 },
  jitter: 'none',
});

async function connectedClients(): Promise<number> {
  return Number(/connected_clients:(\d+)/.exec(await bed.redis.info('clients'))?.[1]);
}

describe('createWorker on Redis', () => {
  it('files into a Redis dead-letter store on its own connection when given no store, and closes what it opened', async () => {
    const { queueName, queue } = bed.queues('default-store');
    const worker = createWorker(
      queueName,
      async () => {
        throw new PermanentError('no such document');
      },
      { connection: bed.connection, policy: fast },
    );
    const log = recordEvents(worker.events);
    const job = await queue.add('index', { docId: 9 });
    await waitFor(() => log.count('dead-letter') === 1, 5_000, 'the dead letter');
    const store = new RedisDeadLetterStore({ redis: bed.redis });
    expect((await store.list(queueName, { limit: 10 })).records).toMatchObject([
      { jobId: job.id, reason: 'permanent', data: { docId: 9 } },
    ]);
    expect((await store.queue(queueName))?.queue).toBe(queueName);
    const clientsBefore = await connectedClients();
    await worker.close();
    // BullMQ's own two connections and the store's one are gone.
    expect(await connectedClients()).toBe(clientsBefore - 3);
  });
});
