import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { run } from '../../src/cli/program.js';
import { queueTag } from '../../src/common/keys.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { deadLetter, redisForFile, uniqueQueue } from '../bullmq/dlq-fixtures.js';

// `stormguard dlq replay` ends with exit 1 when a record it was asked to move stays behind.

const env = redisForFile();

async function stormguard(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

/** A queue's dead letters: `good` records that move, then one whose options BullMQ refuses to add. */
async function fill(good: number, refused: boolean): Promise<string> {
  const queue = uniqueQueue('exit');
  const source = new Queue(queue, { connection: env.connection });
  const dlq = deadLetterQueue(queue, {
    store: new RedisDeadLetterStore({ redis: env.redis }),
    queue: source,
  });
  try {
    for (let i = 0; i < good; i++) await dlq.add(deadLetter(`job-${i}`, { queue }));
    // BullMQ refuses a priority above 2 097 152 when the job is added again.
    if (refused) await dlq.add(deadLetter('refused', { queue, opts: { priority: 3_000_000 } }));
  } finally {
    await dlq.close();
    await source.close();
  }
  return queue;
}

describe('stormguard dlq replay exit code', () => {
  it('is 1 when a record failed to move, with the record in the report', async () => {
    const queue = await fill(2, true);
    const result = await stormguard('dlq', 'replay', queue, '--redis', env.server.url, '--json');
    const report = JSON.parse(result.stdout) as { moved: unknown[]; failed: { jobId: string }[] };
    expect(report.moved).toHaveLength(2);
    expect(report.failed.map((f) => f.jobId)).toEqual(['refused']);
    expect(result.code).toBe(1);
  });

  it('is 1 in human output too, which names the failure', async () => {
    const queue = await fill(1, true);
    const result = await stormguard('dlq', 'replay', queue, '--redis', env.server.url);
    expect(result.stdout).toMatch(/failed/);
    expect(result.code).toBe(1);
  });

  it('is 1 when a selected record is malformed: it stays in the store', async () => {
    const queue = await fill(2, false);
    const page = await new RedisDeadLetterStore({ redis: env.redis }).list(queue, { limit: 10 });
    const id = page.records[0]?.id as string;
    await env.redis.hset(`${queueTag('stormguard', queue)}:dl:rec`, id, '{"name": 7}');
    const result = await stormguard('dlq', 'replay', queue, '--redis', env.server.url);
    expect(result.stdout).toMatch(/skipped malformed record/);
    expect(result.stdout).toMatch(/1 records stayed in the dead-letter store \(exit 1\)/);
    expect(result.code).toBe(1);
  });

  it('is 0 when every record moved', async () => {
    const queue = await fill(2, false);
    const result = await stormguard('dlq', 'replay', queue, '--redis', env.server.url, '--json');
    expect(JSON.parse(result.stdout)).toMatchObject({ failed: [] });
    expect(result.code).toBe(0);
  });
});
