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
import { expectNothingLeft, recordEvents, TestBed, timeoutError } from './harness.js';
import { deadLetterQueue, definePolicy, PermanentError, RetryBudget, TransientError } from './stormguard.js';

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
    await expectNothingLeft(queue);
    expect(await queue.getCompletedCount()).toBe(total / 2);
    expect(await dlq.count()).toBe(total / 2);
    expect(await dlq.count({ reason: 'permanent' })).toBe(total / 4);
    expect(await dlq.count({ reason: 'max-attempts' })).toBe(total / 4);
    // The BullMQ jobs behind the dead letters are failed (never retried by BullMQ), one per record.
    expect(await queue.getFailedCount()).toBe(total / 2);
  });
});

describe('replay and crashes', () => {
  it('replays dead letters after recovery exactly once per side effect, also when the replay is killed half-way and re-run', async () => {
    const { queueName, queue, dlq } = bed.queues('replay');
    const budget = bed.track(
      new RetryBudget({ store: bed.budgetStore(), windowMs: 1_000, minAllowance: 5, timeoutMs: 2_000 }),
    );
    const guard = bed.idempotencyGuard(60_000);
    // Side effects, counted in this process (the workers run here): each must happen once per job.
    const effects = { mail: new Map<number, number>(), search: new Map<number, number>() };
    const count = (kind: keyof typeof effects, id: number) =>
      effects[kind].set(id, (effects[kind].get(id) ?? 0) + 1);
    let searchDown = true;
    const worker = bed.worker<{ id: number }>(
      queueName,
      async (job, ctx) => {
        const { id } = job.data;
        // The receipt is a side effect that must happen once, whatever happens to the job after it.
        await guard.once(`receipt:${id}`, () => ctx.call('mail', () => count('mail', id)));
        await ctx.call('search', async () => {
          if (searchDown) throw timeoutError();
          count('search', id);
        });
      },
      {
        policy,
        budget,
        concurrency: 10,
        idempotency: { guard, key: (job) => `index:${job.data.id}` },
      },
    );
    const log = recordEvents(worker.events);
    const total = 60;
    await queue.addBulk(Array.from({ length: total }, (_, id) => ({ name: 'index', data: { id } })));
    await waitFor(() => log.count('dead-letter') === total, 15_000, 'the outage to dead-letter every job');
    expect(await dlq.count({ reason: 'budget-exhausted' })).toBeGreaterThan(0);

    searchDown = false;
    const first = fixture('replay.ts', [
      JSON.stringify(bed.descriptor),
      queueName,
      '40',
      bed.deadLetterPrefix,
    ]);
    await waitFor(
      () => first.lines.some((line) => line === `moved ${total / 4}`),
      15_000,
      `the first replay to move ${total / 4} jobs (output: ${first.lines.slice(-3).join(' | ')})`,
    );
    await kill(first.child);
    const left = await dlq.count();
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(total);

    // Run again (here, in this process): the records the killed replay moved are gone from the store,
    // one it claimed and did not finish is finished under the same job id, the rest move once.
    const replay = bed.track(
      deadLetterQueue(queueName, {
        store: bed.deadLetters,
        connection: bed.connection,
        ...(bed.queueBackend ? { backend: bed.queueBackend } : {}),
        ...bed.bullPrefixOption,
      }),
    );
    const report = await replay.replay();
    expect(report).toMatchObject({ failed: [], interrupted: false });
    expect(report.moved.length).toBeLessThanOrEqual(left);

    await waitFor(() => log.count('completed') === total, 15_000, 'every replayed job to complete');

    expect(await dlq.count()).toBe(0);
    await expectNothingLeft(queue);
    for (let id = 0; id < total; id++) {
      expect(effects.mail.get(id)).toBe(1);
      expect(effects.search.get(id)).toBe(1);
    }
  });

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
    // stormguard's 'completed' comes from the processor, before BullMQ has stored the completion.
    await waitFor(
      async () => log.count('completed') === 1 && (await job.getState()) === 'completed',
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
    await expectNothingLeft(queue);
  });
});
