import { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { createWorker } from '../../src/bullmq/worker.js';
import type { WorkerBudget } from '../../src/bullmq/worker-options.js';
import { PermanentError } from '../../src/errors/permanent-error.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import type { BudgetVerdict } from '../../src/policy/types.js';
import type { JobRef } from '../../src/runtime/contracts.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { recordEvents, TestBed, unfinished } from '../e2e/harness.js';
import { waitFor } from '../helpers/redis-server.js';

const bed = TestBed.perFile();

const fast = definePolicy({
  name: 'fast',
  maxAttempts: 3,
  backoff: { type: 'fixed', delayMs: 20 },
  jitter: 'none',
});

/** A budget that remembers what the worker told it and answers trySpend as told. */
class RecordingBudget implements WorkerBudget {
  successes: string[] = [];
  spends: string[] = [];
  flushes = 0;
  constructor(
    private readonly answer: (dependency: string, n: number) => boolean = () => true,
    readonly onExhausted: 'dead-letter' | 'defer' = 'dead-letter',
  ) {}
  recordSuccess(dependency: string): void {
    this.successes.push(dependency);
  }
  trySpend(dependency: string): BudgetVerdict {
    this.spends.push(dependency);
    return { granted: this.answer(dependency, this.spends.length), windowMs: 50 };
  }
  async flush(): Promise<void> {
    this.flushes++;
  }
}

/** stormguard's identity of a BullMQ job. */
function refOf(queue: string, job: Job): JobRef {
  return { queue, jobId: job.id as string, createdAt: job.timestamp };
}

/**
 * A worker process that takes `count` jobs and dies holding them: their locks (200 ms) run out and a
 * later worker's stalled-job check recovers them, counting one stall each.
 */
async function crashWhileHolding(queueName: string, count: number): Promise<void> {
  const crashed = bed.bareWorker(queueName, { autorun: false, lockDuration: 200 });
  for (let i = 0; i < count; i++) await crashed.getNextJob(`crashed-${i}`);
  await crashed.close(true);
}

describe('createWorker', () => {
  it('records a success for the dependency of each ctx.call, and for the mapped dependency of a job without calls', async () => {
    const { queueName, queue } = bed.queues('success');
    const budget = new RecordingBudget();
    const worker = bed.worker(
      queueName,
      async (job, ctx) => {
        if (job.name === 'index') {
          await ctx.call('db', () => 1);
          await ctx.call('search', async () => 2);
        }
        return 'ok';
      },
      { policy: fast, budget, dependencies: { reindex: 'search' } },
    );
    const log = recordEvents(worker.events);
    await queue.add('index', {});
    await queue.add('reindex', {});
    await queue.add('warm', {});
    await queue.add('warm cache', {});
    await waitFor(() => log.count('completed') === 4, 5_000, 'four completed jobs');
    // Any job name is a dependency name (keys encode it): `warm cache` is its own dependency.
    expect(budget.successes.sort()).toEqual(['db', 'search', 'search', 'warm', 'warm cache']);
    expect(log.of('completed').map((e) => e.attempts)).toEqual([1, 1, 1, 1]);
    expect(budget.spends).toEqual([]);
  });

  it('retries under its own count: BullMQ attemptsMade counts only the finish while stormguard counts the attempts', async () => {
    const { queueName, queue } = bed.queues('retry');
    let calls = 0;
    const worker = bed.worker(
      queueName,
      async (_job, ctx) => {
        await ctx.call('search', () => {
          calls++;
          if (calls < 3) throw new TransientError('search timed out');
        });
        return calls;
      },
      { policy: fast },
    );
    const log = recordEvents(worker.events);
    const job = await queue.add('index', { docId: 1 });
    await waitFor(() => log.count('completed') === 1, 5_000, 'the job to complete');
    expect(log.of('retry').map((e) => [e.retry, e.chargesAttempt, e.cause, e.dependency])).toEqual([
      [1, true, 'backoff', 'search'],
      [2, true, 'backoff', 'search'],
    ]);
    expect(log.of('completed')[0]?.attempts).toBe(3);
    const done = (await Job.fromId(queue, job.id as string)) as Job;
    await waitFor(async () => (await done.getState()) === 'completed', 2_000, 'the completed state');
    const fresh = (await Job.fromId(queue, job.id as string)) as Job;
    // BullMQ's own counters: moveToDelayed never charges an attempt (only finishing counts one), and
    // every start is counted.
    expect(fresh.attemptsMade).toBe(1);
    expect(fresh.attemptsStarted).toBe(3);
    // stormguard's own count lived in its store, and went when the job completed.
    expect(await bed.deadLetters.readAttempts(refOf(queueName, fresh))).toBeUndefined();
  });

  it('dead-letters after maxAttempts even when the job was added with a larger BullMQ attempts, and warns once', async () => {
    const { queueName, queue, dlq } = bed.queues('ceiling');
    const warnings: string[] = [];
    let runs = 0;
    const worker = bed.worker(
      queueName,
      async () => {
        runs++;
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
      {
        policy: fast,
        dependencies: { sync: 'crm' },
        onWarning: (m) => warnings.push(m),
      },
    );
    const log = recordEvents(worker.events);
    const job = await queue.add('sync', { id: 7 }, { attempts: 10, backoff: { type: 'fixed', delay: 10 } });
    await queue.add('sync', { id: 8 }, { attempts: 10 });
    await waitFor(() => log.count('dead-letter') === 2, 5_000, 'two dead letters');
    expect(runs).toBe(6);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/attempts: 10.*allows 3/);
    const record = await dlq.get(job.id as string);
    expect(record).toMatchObject({
      jobId: job.id,
      queue: queueName,
      name: 'sync',
      data: { id: 7 },
      reason: 'max-attempts',
      attemptsMade: 3,
      dependency: 'crm',
      replays: 0,
      lastError: { name: 'Error', message: 'connect ECONNREFUSED', classification: { retryable: true } },
    });
    expect(record?.opts).toMatchObject({ attempts: 10 });
    expect(record?.firstFailedAt).toBeLessThanOrEqual(record?.deadLetteredAt as number);
    // Every attempt, numbered as BullMQ started it, with what was decided after it.
    expect(record?.history?.map((a) => [a.attempt, a.decision, a.cause, a.error.message])).toEqual([
      [1, 'retry', 'backoff', 'connect ECONNREFUSED'],
      [2, 'retry', 'backoff', 'connect ECONNREFUSED'],
      [3, 'dead-letter', 'max-attempts', 'connect ECONNREFUSED'],
    ]);
    expect(record?.history?.map((a) => typeof a.delayMs)).toEqual(['number', 'number', 'undefined']);
    const failed = (await Job.fromId(queue, job.id as string)) as Job;
    await waitFor(async () => (await failed.getState()) === 'failed', 2_000, 'the original to be failed');
    const original = (await Job.fromId(queue, job.id as string)) as Job;
    expect(original.failedReason).toMatch(
      /^dead-lettered \(max-attempts\): 3 of 3 attempts made; last error: /,
    );
    expect(await unfinished(queue)).toBe(0);
  });

  it('waits at least as long as the server asked (Retry-After), and a caller waiting on a dead-lettered job is told', async () => {
    const { queueName, queue } = bed.queues('retry-after');
    const events = bed.queueEvents(queueName);
    await events.waitUntilReady();
    let calls = 0;
    const worker = bed.worker(
      queueName,
      async (_job, ctx) => {
        await ctx.call('crm', () => {
          calls++;
          throw calls === 1
            ? new TransientError('429 from the CRM', { retryAfterMs: 300 })
            : new PermanentError('contact was deleted');
        });
      },
      { policy: fast },
    );
    const log = recordEvents(worker.events);
    const job = await queue.add('sync', {});
    await expect(job.waitUntilFinished(events, 5_000)).rejects.toThrow(/^dead-lettered \(permanent\): /);
    expect(log.of('retry').map((e) => [e.cause, e.delayMs >= 300])).toEqual([['retry-after', true]]);
  });

  it('charges a failure to the ctx.call that threw it, even when rethrown as a cause', async () => {
    const { queueName, queue, dlq } = bed.queues('attribution');
    const worker = bed.worker(
      queueName,
      async (_job, ctx) => {
        await ctx.call('db', () => 'row');
        try {
          await ctx.call('mail', () => {
            throw new PermanentError('mailbox does not exist');
          });
        } catch (error) {
          throw new Error('could not send the receipt', { cause: error });
        }
      },
      { policy: fast },
    );
    const log = recordEvents(worker.events);
    const job = await queue.add('receipt', {});
    await waitFor(() => log.count('dead-letter') === 1, 5_000, 'a dead letter');
    expect(log.of('dead-letter')[0]).toEqual({
      queue: queueName,
      task: 'receipt',
      dependency: 'mail',
      reason: 'permanent',
    });
    expect(await dlq.get(job.id as string)).toMatchObject({
      reason: 'permanent',
      attemptsMade: 1,
      dependency: 'mail',
    });
  });

  it('a budget deferral reschedules without using up an attempt', async () => {
    const { queueName, queue, dlq } = bed.queues('defer');
    // Deny the first two spends, then grant: the failed first run is deferred; the deferred job asks again
    // before it runs and is deferred again without running; granted, it runs, then ordinary retries.
    const budget = new RecordingBudget((_dep, n) => n > 2, 'defer');
    const worker = bed.worker(
      queueName,
      async () => {
        throw new TransientError('still down');
      },
      { policy: fast, budget },
    );
    const log = recordEvents(worker.events);
    const job = await queue.add('ping', {});
    await waitFor(() => log.count('dead-letter') === 1, 5_000, 'a dead letter');
    expect(log.of('retry').map((e) => [e.cause, e.chargesAttempt])).toEqual([
      ['budget-deferred', false],
      ['budget-deferred', false],
      ['backoff', true],
      ['backoff', true],
    ]);
    expect(log.count('attempt')).toBe(4);
    expect(await dlq.get(job.id as string)).toMatchObject({ reason: 'max-attempts', attemptsMade: 3 });
  });

  it('an open breaker delays a job to its half-open time without calling the dependency or using up an attempt', async () => {
    const { queueName, queue, dlq } = bed.queues('breaker');
    const breaker = new CircuitBreaker({
      consecutiveFailures: 2,
      coolDownMs: 300,
      halfOpenProbes: 1,
      successesToClose: 1,
    });
    let calls = 0;
    const worker = bed.worker<{ n: number }>(
      queueName,
      async (_job, ctx) => {
        await ctx.call('search', () => {
          calls++;
          if (calls <= 2) throw new TransientError('search down');
        });
      },
      { policy: definePolicy({ ...fast, maxAttempts: 2 }), breaker },
    );
    const log = recordEvents(worker.events);
    const first = await queue.add('index', { n: 1 });
    await waitFor(() => log.count('dead-letter') === 1, 5_000, 'the first job to use up its attempts');
    expect((await breaker.check('search')).state).toBe('open');
    expect(await dlq.get(first.id as string)).toMatchObject({ reason: 'max-attempts' });

    await queue.add('index', { n: 2 });
    await waitFor(
      () => log.count('completed') === 1,
      5_000,
      'the second job to run once the breaker half-opens',
    );
    expect(calls).toBe(3);
    expect(log.of('retry').map((e) => [e.cause, e.chargesAttempt, e.errorClass])).toEqual([
      ['backoff', true, 'TransientError'],
      ['breaker-open', false, 'BrokenCircuitError'],
    ]);
    expect(log.of('completed')[0]?.attempts).toBe(1);
    expect((await breaker.check('search')).state).toBe('closed');
  });

  it('without a dead-letter queue, a terminal decision fails the BullMQ job and BullMQ does not retry it', async () => {
    const { queueName, queue, dlq } = bed.queues('no-dlq');
    let runs = 0;
    const worker = bed.worker(
      queueName,
      async () => {
        runs++;
        throw new PermanentError('bad input');
      },
      { policy: fast, deadLetters: false, attemptState: new MemoryDeadLetterStore() },
    );
    expect(worker.deadLetters).toBeUndefined();
    const job = await queue.add('parse', {}, { attempts: 3 });
    await waitFor(async () => (await queue.getFailedCount()) === 1, 5_000, 'a failed job');
    expect(runs).toBe(1);
    expect(((await Job.fromId(queue, job.id as string)) as Job).failedReason).toMatch(/^permanent: /);
    expect(await dlq.count()).toBe(0);
  });

  it('completes a dead-lettered flow child with a marker, so its parent does not wait forever', async () => {
    const { queueName, queue, dlq } = bed.queues('flow');
    const flows = bed.flowProducer();
    let childValues: Record<string, unknown> = {};
    const worker = bed.worker(
      queueName,
      async (job) => {
        if (job.name === 'batch') {
          childValues = await job.getChildrenValues();
          return 'batch done';
        }
        if (job.name === 'bad') throw new PermanentError('no such document');
        return 'indexed';
      },
      { policy: fast },
    );
    const log = recordEvents(worker.events);
    const tree = await flows.add({
      name: 'batch',
      queueName,
      children: [
        { name: 'good', queueName, data: {} },
        { name: 'bad', queueName, data: {} },
        { name: 'strict', queueName, data: {}, opts: { failParentOnFailure: true } },
      ],
    });
    // 'strict' is not 'bad': it succeeds; a failing strict child would fail the parent as BullMQ says.
    await waitFor(() => log.of('completed').some((e) => e.task === 'batch'), 5_000, 'the parent to complete');
    const bad = tree.children?.find((c) => c.job.name === 'bad')?.job as Job;
    expect(await dlq.get(bad.id as string)).toMatchObject({ reason: 'permanent', name: 'bad' });
    expect(Object.values(childValues)).toContainEqual({
      stormguard: 'dead-lettered',
      reason: 'permanent',
      queue: queueName,
      recordId: (await dlq.get(bad.id as string))?.id,
      jobId: bad.id,
    });
    expect(await unfinished(queue)).toBe(0);
  });

  it('dead-letters the parent of a failed failParentOnFailure child as permanent, without running it', async () => {
    const { queueName, queue, dlq } = bed.queues('flow-strict');
    const flows = bed.flowProducer();
    let parentRuns = 0;
    const worker = bed.worker(
      queueName,
      async (job) => {
        if (job.name === 'batch') parentRuns++;
        else throw new PermanentError('no such document');
      },
      { policy: fast },
    );
    const log = recordEvents(worker.events);
    const tree = await flows.add({
      name: 'batch',
      queueName,
      children: [{ name: 'strict', queueName, data: {}, opts: { failParentOnFailure: true } }],
    });
    await waitFor(() => log.count('dead-letter') === 2, 5_000, 'the child and the parent dead-lettered');
    expect(parentRuns).toBe(0);
    expect(await dlq.get(tree.job.id as string)).toMatchObject({
      reason: 'permanent',
      detail: expect.stringMatching(/^child .* failed and the job was added with failParentOnFailure/),
      lastError: {
        name: 'ChildJobFailedError',
        classification: { retryable: false, reason: 'child-failed' },
      },
    });
    expect(await unfinished(queue)).toBe(0);
  });

  it('dead-letters a job that stalled more often than maxStalledCount allows, without running it, instead of losing it in the failed set', async () => {
    const { queueName, queue, dlq } = bed.queues('stalled-out');
    const job = await queue.add('index', { docId: 3 });
    await crashWhileHolding(queueName, 1);
    let runs = 0;
    const worker = bed.worker(
      queueName,
      async () => {
        runs++;
      },
      { policy: fast, workerOptions: { stalledInterval: 50, maxStalledCount: 0 } },
    );
    const log = recordEvents(worker.events);
    await waitFor(() => log.count('dead-letter') === 1, 5_000, 'the dead letter');
    expect(runs).toBe(0);
    expect(await dlq.get(job.id as string)).toMatchObject({
      reason: 'max-attempts',
      detail:
        'stalled 1 times, more than maxStalledCount (0) allows: its worker crashed or blocked while running it',
      lastError: { name: 'StalledJobError', classification: { retryable: false, reason: 'stalled' } },
    });
    await waitFor(async () => (await queue.getFailedCount()) === 1, 2_000, 'the BullMQ job to fail');
    expect(await unfinished(queue)).toBe(0);
  });

  it('dead-letters a job BullMQ fails unprocessed past maxStartedAttempts, from its failed event', async () => {
    const { queueName, queue, dlq } = bed.queues('started-out');
    const job = await queue.add('index', { docId: 6 });
    await crashWhileHolding(queueName, 1);
    let runs = 0;
    const worker = bed.worker(
      queueName,
      async () => {
        runs++;
      },
      { policy: fast, workerOptions: { stalledInterval: 50, maxStartedAttempts: 1 } },
    );
    const log = recordEvents(worker.events);
    await waitFor(() => log.count('dead-letter') === 1, 5_000, 'the dead letter');
    expect(runs).toBe(0);
    expect(await dlq.get(job.id as string)).toMatchObject({
      reason: 'max-attempts',
      detail: 'BullMQ failed it without running it: job started more than allowable limit',
      lastError: { name: 'UnprocessedJobError', classification: { retryable: false, reason: 'unprocessed' } },
    });
  });

  it('runs a job that stalled no more often than maxStalledCount allows, without charging an attempt for the stall', async () => {
    const { queueName, queue } = bed.queues('stalled-once');
    await queue.add('index', { docId: 5 });
    await crashWhileHolding(queueName, 1);
    const worker = bed.worker(queueName, async () => 'done', {
      policy: fast,
      workerOptions: { stalledInterval: 50 },
    });
    const log = recordEvents(worker.events);
    await waitFor(() => log.count('completed') === 1, 5_000, 'the recovered job to complete');
    expect(log.of('completed')[0]?.attempts).toBe(1);
  });

  it('a job whose worker filed its dead letter and crashed before failing it is failed, never run again nor filed twice', async () => {
    const { queueName, queue, dlq } = bed.queues('dead-crash');
    const job = await queue.add('index', { docId: 2 });
    // The crashed worker took the job, filed its record with the final state, and died before failing it.
    await crashWhileHolding(queueName, 1);
    const taken = (await Job.fromId(queue, job.id as string)) as Job;
    const ref = refOf(queueName, taken);
    const record = {
      ...ref,
      name: 'index',
      data: { docId: 2 },
      opts: {},
      reason: 'max-attempts' as const,
      detail: '3 of 3 attempts made',
      lastError: {
        name: 'TransientError',
        message: 'search timed out for 2',
        classification: { retryable: true, reason: 'transient-error' },
      },
      attemptsMade: 3,
      dependency: 'search',
      firstFailedAt: 1_000,
      deadLetteredAt: 5_002,
      replays: 0,
    };
    const { id } = await bed.deadLetters.file(
      record,
      { attempts: 3, deferrals: 0, firstFailedAt: 1_000 },
      60_000,
    );

    const runs: string[] = [];
    const worker = bed.worker(
      queueName,
      async (running) => {
        runs.push(running.id as string);
      },
      { policy: fast, workerOptions: { stalledInterval: 50 } },
    );
    const log = recordEvents(worker.events);
    const failedReasons = new Map<string, string>();
    worker.on('failed', (failed, error) => failedReasons.set(failed?.id as string, error.message));
    await waitFor(() => failedReasons.size === 1, 5_000, 'the job to fail');
    expect(runs).toEqual([]);
    expect(failedReasons.get(job.id as string)).toBe('dead-lettered (max-attempts): 3 of 3 attempts made');
    expect(await dlq.all()).toEqual([{ ...record, id }]);
    expect(log.count('dead-letter')).toBe(0);
    expect(await unfinished(queue)).toBe(0);
  });

  it('files the record and marks the job dead-lettered in its attempt state, in one write', async () => {
    const { queueName, queue, dlq } = bed.queues('dead-mark');
    const worker = bed.worker(
      queueName,
      async () => {
        throw new PermanentError('no such document');
      },
      { policy: fast, dependencies: { index: 'search' } },
    );
    const log = recordEvents(worker.events);
    const job = await queue.add('index', { docId: 4 });
    await waitFor(() => log.count('dead-letter') === 1, 5_000, 'the dead letter');
    const record = await dlq.get(job.id as string);
    const state = await bed.deadLetters.readAttempts(refOf(queueName, job));
    expect(state?.deadLettered).toEqual({
      reason: 'permanent',
      detail: 'permanent-error is not retryable',
      recordId: record?.id,
      at: record?.deadLetteredAt,
    });
    expect(state?.attempts).toBe(1);
  });

  it('runs a keyed job through the idempotency guard', async () => {
    const { queueName, queue } = bed.queues('idempotent');
    const outcomes = new Map<string, unknown>();
    const guard = {
      async once<T>(key: string, fn: () => T | Promise<T>): Promise<T> {
        if (outcomes.has(key)) return outcomes.get(key) as T;
        const value = await fn();
        outcomes.set(key, value);
        return value;
      },
    };
    let sideEffects = 0;
    const worker = bed.worker<{ order: string }, string>(
      queueName,
      async (job, ctx) => {
        sideEffects++;
        return `charged ${job.data.order} with ${ctx.idempotencyKey}`;
      },
      {
        policy: fast,
        idempotency: { guard, key: (job) => `charge:${job.data.order}` },
      },
    );
    const log = recordEvents(worker.events);
    const first = await queue.add('charge', { order: 'A' });
    const second = await queue.add('charge', { order: 'A' });
    await waitFor(() => log.count('completed') === 2, 5_000, 'both jobs');
    expect(sideEffects).toBe(1);
    for (const job of [first, second])
      expect(((await Job.fromId(queue, job.id as string)) as Job).returnvalue).toBe(
        'charged A with charge:A',
      );
  });

  it('dead-letters a job whose idempotency key cannot be computed, without running it', async () => {
    const { queueName, queue, dlq } = bed.queues('bad-key');
    let runs = 0;
    const guard = { once: async <T>(_key: string, fn: () => T | Promise<T>): Promise<T> => fn() };
    const worker = bed.worker<{ order?: { id: string } }>(
      queueName,
      async () => {
        runs++;
      },
      {
        policy: fast,
        idempotency: { guard, key: (job) => `charge:${(job.data.order as { id: string }).id}` },
      },
    );
    const log = recordEvents(worker.events);
    const job = await queue.add('charge', {});
    await waitFor(() => log.count('dead-letter') === 1, 5_000, 'the dead letter');
    expect(runs).toBe(0);
    expect(await dlq.get(job.id as string)).toMatchObject({
      reason: 'permanent',
      lastError: { name: 'PermanentError', message: expect.stringMatching(/^idempotency.key threw: /) },
    });
  });

  it('close() finishes the job in flight, then flushes the budget', async () => {
    const { queueName, queue } = bed.queues('close');
    const budget = new RecordingBudget();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = false;
    const worker = createWorker(
      queueName,
      async () => {
        started = true;
        await gate;
      },
      { ...bed.workerOptions(), policy: fast, budget },
    );
    await queue.add('slow', {});
    await waitFor(() => started, 5_000, 'the job to start');
    const closed = worker.close();
    expect(budget.flushes).toBe(0);
    release();
    await closed;
    expect(budget.successes).toEqual(['slow']);
    expect(budget.flushes).toBe(1);
    expect(await queue.getCompletedCount()).toBe(1);
    await worker.close();
    expect(budget.flushes).toBe(1);
  });

  it('a throwing event listener is reported as the worker error and does not fail the job', async () => {
    const { queueName, queue } = bed.queues('listener');
    const worker = bed.worker(queueName, async () => 'ok', { policy: fast });
    const errors: Error[] = [];
    worker.on('error', (error) => errors.push(error));
    worker.events.on('completed', () => {
      throw new Error('broken metrics hook');
    });
    const log = recordEvents(worker.events);
    const job = await queue.add('warm', {});
    await waitFor(() => log.count('completed') === 1, 5_000, 'the job');
    await waitFor(async () => (await queue.getCompletedCount()) === 1, 5_000, 'the completed state');
    expect(((await Job.fromId(queue, job.id as string)) as Job).returnvalue).toBe('ok');
    expect(errors.map((e) => e.message)).toEqual(['broken metrics hook']);
  });

  it('rejects bad options with a one-line message naming the option', async () => {
    const make = (options: Record<string, unknown>) => () =>
      createWorker('q', async () => {}, { ...bed.workerOptions(), policy: fast, ...options } as never);
    expect(make({ policy: { maxAttempts: 'x' } })).toThrow(/policy must be/);
    expect(make({ dependencies: { index: '' } })).toThrow(/dependencies\.index must not be empty/);
    expect(make({ dependencies: { index: 'x'.repeat(201) } })).toThrow(/dependencies\.index /);
    expect(make({ concurrency: 0 })).toThrow(/concurrency must be an integer >= 1/);
    const guard = (ttlMs: number) => ({ guard: { once: async () => undefined, ttlMs }, key: () => 'k' });
    const aged = definePolicy({ name: 'aged', maxAttempts: 3, maxAgeMs: '4h' });
    expect(make({ policy: aged, idempotency: guard(3_600_000) })).toThrow(
      /guard keeps outcomes for 1h \(ttlMs\) but policy "aged" retries for up to 4h \(maxAge\)/,
    );
    const lasting = make({
      policy: aged,
      idempotency: guard(4 * 3_600_000),
      workerOptions: { autorun: false },
    });
    const made = lasting() as unknown as { waitUntilReady(): Promise<void>; close(): Promise<void> };
    // On BullMQ 6's PostgreSQL backend a worker closed before it is ready leaves its LISTEN connection open.
    await made.waitUntilReady();
    await made.close();
    expect(() => createWorker('a:b', async () => {}, { ...bed.workerOptions(), policy: fast })).toThrow(
      /queue name/,
    );
    expect(make({ deadLetters: 'redis' })).toThrow(/options\.deadLetters must be a DeadLetterStore/);
    expect(make({ deadLetters: undefined, backend: () => undefined })).toThrow(
      /with a backend, give deadLetters \(a PostgresDeadLetterStore/,
    );
    expect(make({ deadLetters: false })).toThrow(/with deadLetters: false, give attemptState/);
    expect(make({ workerOptions: { maxStalledCount: -1 } })).toThrow(
      /maxStalledCount must be an integer >= 0/,
    );
  });
});
