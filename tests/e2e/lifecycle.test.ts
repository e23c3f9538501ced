/**
 * Every job ends completed or dead-lettered, and replay and crashes lose and duplicate nothing: a real
 * queue backend, real BullMQ, killed child processes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/redis-server.js';
import { CRASH_TEST_WORKER_OPTIONS } from './fixtures/crash-settings.js';
import { recordEvents, TestBed, timeoutError, unfinished } from './harness.js';
import { definePolicy, PermanentError, TransientError } from './stormguard.js';

const bed = TestBed.perFile();

const policy = definePolicy({
  name: 'lifecycle',
  maxAttempts: 3,
  backoff: { type: 'exponential', baseMs: 20, factor: 2, maxDelayMs: 200 },
  jitter: 'full',
});

/** Runs a fixture script under tsx in its own process and collects its output lines. */
function fixture(script: string, args: string[]): { child: ChildProcess; lines: string[] } {
  const path = fileURLToPath(new URL(`./fixtures/${script}`, import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', path, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal === null) lines.push(`exited ${code}: ${stderr}`);
  });
  return { child, lines };
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

describe('every job ends completed or dead-lettered', () => {
  it('sends a permanent error straight to the dead-letter queue with reason permanent', async () => {
    const { queueName, queue, dlq } = bed.queues('permanent');
    let runs = 0;
    const worker = bed.worker(
      queueName,
      async () => {
        runs++;
        throw new PermanentError('document 42 has no title');
      },
      { policy },
    );
    const log = recordEvents(worker.events);
    const job = await queue.add('index', { docId: 42 });
    await waitFor(() => log.count('dead-letter') === 1, 5_000, 'the dead letter');
    expect(runs).toBe(1);
    expect(log.count('retry')).toBe(0);
    expect(await dlq.get(job.id as string)).toMatchObject({
      reason: 'permanent',
      attemptsMade: 1,
      data: { docId: 42 },
      lastError: {
        name: 'PermanentError',
        message: 'document 42 has no title',
        classification: { retryable: false },
      },
    });
  });

  it('loses none: of a mixed load, every job is completed or in the dead-letter queue, and nothing is left', async () => {
    const { queueName, queue, dlq } = bed.queues('mixed');
    const failures = new Map<number, number>();
    type Kind = 'ok' | 'flaky' | 'permanent' | 'down';
    const worker = bed.worker<{ id: number; kind: Kind }>(
      queueName,
      async (job, ctx) => {
        const { id, kind } = job.data;
        await ctx.call('search', () => {
          if (kind === 'permanent') throw new PermanentError('bad document');
          if (kind === 'down') throw timeoutError();
          if (kind === 'flaky' && (failures.get(id) ?? 0) < 1) {
            failures.set(id, 1);
            throw new TransientError('blip');
          }
        });
      },
      { policy, concurrency: 20 },
    );
    const log = recordEvents(worker.events);
    const kinds: Kind[] = ['ok', 'flaky', 'permanent', 'down'];
    const total = 200;
    await queue.addBulk(
      Array.from({ length: total }, (_, id) => ({
        name: 'index',
        data: { id, kind: kinds[id % 4] as Kind },
      })),
    );
    await waitFor(
      () => log.count('completed') + log.count('dead-letter') === total,
      20_000,
      'every job to end',
    );
    expect(await unfinished(queue)).toBe(0);
    expect(await queue.getCompletedCount()).toBe(total / 2);
    expect(await dlq.count()).toBe(total / 2);
    expect(await dlq.count({ reason: 'permanent' })).toBe(total / 4);
    expect(await dlq.count({ reason: 'max-attempts' })).toBe(total / 4);
    // The BullMQ jobs behind the dead letters are failed (never retried by BullMQ), one per record.
    expect(await queue.getFailedCount()).toBe(total / 2);
  });
});

describe('replay and crashes', () => {
  // Replay moves to the dead-letter store's own API (claimReplay, completeReplay); the test that kills a
  // replay half-way and runs it again comes back with it.
  it.todo(
    'replays dead letters after recovery exactly once per side effect, also when the replay is killed half-way and re-run',
  );

  it('loses nothing when a worker process is killed with SIGKILL mid-job', async () => {
    const { queueName, queue, dlq } = bed.queues('crash');
    const job = await queue.add('index', { docId: 7 });
    const crashing = fixture('crash-worker.ts', [JSON.stringify(bed.descriptor), queueName]);
    try {
      await waitFor(
        () => crashing.lines.includes(`started ${job.id}`),
        15_000,
        `the job to start in the child (output: ${crashing.lines.slice(-3).join(' | ')})`,
      );
      await kill(crashing.child);
    } finally {
      await kill(crashing.child);
    }
    expect(await (await Job.fromId(queue, job.id as string))?.getState()).toBe('active');

    let recoveredRuns = 0;
    const worker = bed.worker(
      queueName,
      async (recovered) => {
        recoveredRuns++;
        return `indexed ${(recovered.data as { docId: number }).docId}`;
      },
      { policy, workerOptions: CRASH_TEST_WORKER_OPTIONS },
    );
    const log = recordEvents(worker.events);
    await waitFor(
      () => log.count('completed') === 1,
      10_000,
      'the stalled job to be recovered and completed',
    );
    expect(recoveredRuns).toBe(1);
    const done = (await Job.fromId(queue, job.id as string)) as Job;
    expect(done.returnvalue).toBe('indexed 7');
    expect(done.attemptsStarted).toBe(2);
    // The killed attempt never reached stormguard's failure path, so it did not use up an attempt.
    expect(log.of('completed')[0]?.attempts).toBe(1);
    expect(await dlq.count()).toBe(0);
    expect(await unfinished(queue)).toBe(0);
  });
});
