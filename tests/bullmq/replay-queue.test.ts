import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { bullmqReplayQueue } from '../../src/bullmq/bullmq-replay-queue.js';
import { replayOrigin } from '../../src/bullmq/dead-letter-ids.js';
import { describeReplayQueue } from '../../src/runtime/replay/replay-queue.case.js';
import { freePort } from '../helpers/redis-server.js';
import { redisForFile, uniqueQueue } from './dlq-fixtures.js';

const env = redisForFile();

describeReplayQueue(
  'bullmqReplayQueue',
  async () => {
    const name = uniqueQueue('replay-queue');
    const queue = new Queue(name, { connection: env.connection });
    // The same queue through a client of a server that is not there: every add fails at once.
    const nowhere = new Redis({
      port: await freePort(),
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    nowhere.on('error', () => {});
    const down = new Queue(name, { connection: nowhere as never });
    down.on('error', () => {});
    return {
      jobs: bullmqReplayQueue(queue),
      down: bullmqReplayQueue(down),
      held: async () =>
        (await queue.getJobs()).map((job) => ({
          id: String(job.id),
          name: job.name,
          data: job.data as unknown,
          origin: replayOrigin({ id: job.id, opts: job.opts }),
        })),
      close: async () => {
        await queue.obliterate({ force: true });
        await queue.close();
        await down.close().catch(() => {});
        nowhere.disconnect();
      },
    };
  },
  { deduplicates: true },
);
