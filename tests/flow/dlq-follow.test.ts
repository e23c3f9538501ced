import { once } from 'node:events';
import { Queue } from 'bullmq';
import { beforeAll, describe, expect, it } from 'vitest';
import { replayOrigin } from '../../src/bullmq/dead-letter-ids.js';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { deadLetter, redisForFile, uniqueQueue } from '../bullmq/dlq-fixtures.js';
import { ensureCliBuilt, spawnCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/redis-server.js';

beforeAll(() => ensureCliBuilt('dlq'), 120_000);
const env = redisForFile();

describe('stormguard dlq replay --follow', () => {
  it('replays budget-exhausted and breaker-open records as they are filed, leaves the others, and stops on SIGINT', async () => {
    const queue = uniqueQueue('follow');
    const source = new Queue(queue, { connection: env.connection });
    const dlq = deadLetterQueue(queue, {
      store: new RedisDeadLetterStore({ redis: env.redis }),
      queue: source,
    });
    const now = Date.now();
    await dlq.add(deadLetter('early', { queue, reason: 'budget-exhausted', deadLetteredAt: now - 2_000 }));
    await dlq.add(deadLetter('bug', { queue, reason: 'permanent', deadLetteredAt: now - 1_500 }));
    const child = spawnCli(
      ['dlq', 'replay', queue, '--redis', env.server.url, '--follow', '--poll-interval', '50ms', '--json'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    child.stdout?.on('data', (chunk) => {
      stdout += String(chunk);
    });
    const originals = async () =>
      (await source.getJobs()).map((job) => replayOrigin(job).originalJobId).sort();
    try {
      await waitFor(async () => (await originals()).includes('early'), 30_000, 'the first record replayed');
      // Filed while it follows: replayed on a later pass.
      await dlq.add(deadLetter('late', { queue, reason: 'breaker-open', deadLetteredAt: Date.now() }));
      await waitFor(async () => (await originals()).includes('late'), 30_000, 'the later record replayed');
      const exited = once(child, 'exit');
      child.kill('SIGINT');
      const [code] = await exited;
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toEqual({
        queue,
        follow: true,
        reasons: ['budget-exhausted', 'breaker-open'],
        moved: 2,
        failed: 0,
        malformed: 0,
      });
      expect(await originals()).toEqual(['early', 'late']);
      expect(await dlq.count({ reason: 'permanent' })).toBe(1);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await source.close();
    }
  });
});
