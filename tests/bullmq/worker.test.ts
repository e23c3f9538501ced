import { FlowProducer, Job, QueueEvents, Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { PermanentError } from '../../src/errors/permanent-error.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { ATTEMPT_STATE_FIELD, parseAttemptState } from '../../src/bullmq/attempts.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { deadLetterRecordOf } from '../../src/bullmq/worker-dead-letter.js';
import type { WorkerBudget } from '../../src/bullmq/worker-options.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import type { BudgetVerdict } from '../../src/policy/types.js';
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
    // A job name that cannot be a dependency name (BullMQ allows spaces) becomes one: `warm cache` → `warm_cache`.
    expect(budget.successes.sort()).toEqual(['db', 'search', 'search', 'warm', 'warm_cache']);
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
    const client = await queue.client;
    const state = parseAttemptState(await client.hget(queue.toKey(job.id as string), ATTEMPT_STATE_FIELD));
    expect(state).toMatchObject({ attempts: 2, deferrals: 0, previousDelayMs: 20 });
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
    const failed = (await Job.fromId(queue, job.id as string)) as Job;
    await waitFor(async () => (await failed.getState()) === 'failed', 2_000, 'the original to be failed');
    const original = (await Job.fromId(queue, job.id as string)) as Job;
    expect(original.failedReason).toMatch(/dead-lettered to ".*-dlq" \(max-attempts\)/);
    expect(await unfinished(queue)).toBe(0);
  });

  it('waits at least as long as the server asked (Retry-After), and a caller waiting on a dead-lettered job is told', async () => {
    const { queueName, queue } = bed.queues('retry-after');
    const events = new QueueEvents(queueName, { connection: bed.connection });
    bed.track(events);
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
    await expect(job.waitUntilFinished(events, 5_000)).rejects.toThrow(
      /dead-lettered to ".*-dlq" \(permanent\)/,
    );
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
    // Deny the first two spends, then grant: two deferrals, then ordinary retries.
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
    expect(log.count('attempt')).toBe(5);
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
      { policy: fast, deadLetter: false },
    );
    expect(worker.deadLetterQueueName).toBeUndefined();
    const job = await queue.add('parse', {}, { attempts: 3 });
    await waitFor(async () => (await queue.getFailedCount()) === 1, 5_000, 'a failed job');
    expect(runs).toBe(1);
    expect(((await Job.fromId(queue, job.id as string)) as Job).failedReason).toMatch(/^permanent: /);
    expect(await dlq.count()).toBe(0);
  });

  it('completes a dead-lettered flow child with a marker, so its parent does not wait forever', async () => {
    const { queueName, queue, dlq } = bed.queues('flow');
    const flows = new FlowProducer({ connection: bed.connection });
    bed.track(flows);
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
      deadLetterQueue: `${queueName}-dlq`,
      jobId: bad.id,
    });
    expect(await unfinished(queue)).toBe(0);
  });

  it('dead-letters the parent of a failed failParentOnFailure child as permanent, without running it', async () => {
    const { queueName, queue, dlq } = bed.queues('flow-strict');
    const flows = new FlowProducer({ connection: bed.connection });
    bed.track(flows);
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

  it('dead-letters a job BullMQ would fail unprocessed after too many stalls, instead of losing it in the failed set', async () => {
    const { queueName, queue, dlq } = bed.queues('stalled-out');
    const job = await queue.add('index', { docId: 3 });
    // What BullMQ's stalled-job check leaves on a job that stalled more than maxStalledCount times.
    const client = await queue.client;
    await client.hset(queue.toKey(job.id as string), { defa: 'job stalled more than allowable limit' });
    let runs = 0;
    const worker = bed.worker(
      queueName,
      async () => {
        runs++;
      },
      { policy: fast },
    );
    const log = recordEvents(worker.events);
    await waitFor(() => log.count('dead-letter') === 1, 5_000, 'the dead letter');
    expect(runs).toBe(0);
    expect(await dlq.get(job.id as string)).toMatchObject({
      reason: 'max-attempts',
      detail: expect.stringMatching(/stalled more times than maxStalledCount allows/),
      lastError: { name: 'StalledJobError', classification: { retryable: false, reason: 'stalled' } },
    });
    expect(await unfinished(queue)).toBe(0);
  });

  it('a job dead-lettered by a worker that crashed before failing it is filed again and failed, never run again', async () => {
    const { queueName, queue, dlq } = bed.queues('dead-crash');
    const unfiled = await queue.add('index', { docId: 1 });
    const filed = await queue.add('index', { docId: 2 });
    // The crashed worker: it took both jobs and wrote their dead-lettered state; it filed the second one's
    // record and died before failing either. Its locks are gone, as after a crash once they expire.
    const crashed = new Worker(queueName, null, { connection: bed.connection, autorun: false });
    await crashed.getNextJob('crashed-1');
    await crashed.getNextJob('crashed-2');
    await crashed.close(true);
    const client = await queue.client;
    const deadLettered = (docId: number) => ({
      reason: 'max-attempts',
      detail: '3 of 3 attempts used',
      lastError: {
        name: 'TransientError',
        message: `search timed out for ${docId}`,
        classification: { retryable: true, reason: 'transient-error' },
      },
      attemptsMade: 3,
      dependency: 'search',
      at: 5_000 + docId,
    });
    for (const [job, docId] of [
      [unfiled, 1],
      [filed, 2],
    ] as const) {
      const state = { attempts: 3, deferrals: 0, firstFailedAt: 1_000, deadLettered: deadLettered(docId) };
      await client.hset(queue.toKey(job.id as string), { [ATTEMPT_STATE_FIELD]: JSON.stringify(state) });
      await client.del(`${queue.toKey(job.id as string)}:lock`);
    }
    const original = deadLetterRecordOf(filed, {
      queue: queueName,
      reason: 'max-attempts',
      detail: 'filed before the crash',
      error: new Error('search timed out for 2'),
      classification: { retryable: true, reason: 'transient-error' },
      attemptsMade: 3,
      dependency: 'search',
      idempotencyKey: undefined,
      firstFailedAt: 1_000,
      nowMs: 5_002,
    });
    await dlq.add(original);

    const runs: string[] = [];
    const worker = bed.worker(
      queueName,
      async (job) => {
        runs.push(job.id as string);
      },
      { policy: fast, workerOptions: { stalledInterval: 50 } },
    );
    const log = recordEvents(worker.events);
    const failedReasons = new Map<string, string>();
    worker.on('failed', (job, error) => failedReasons.set(job?.id as string, error.message));
    await waitFor(() => failedReasons.size === 2, 5_000, 'both jobs to fail');
    expect(runs).toEqual([]);
    expect(failedReasons.get(unfiled.id as string)).toMatch(
      /^dead-lettered to ".*-dlq" \(max-attempts\): 3 of 3 attempts used; last error: search timed out for 1$/,
    );
    expect(await dlq.get(unfiled.id as string)).toMatchObject({
      jobId: unfiled.id,
      data: { docId: 1 },
      reason: 'max-attempts',
      lastError: deadLettered(1).lastError,
      attemptsMade: 3,
      dependency: 'search',
      firstFailedAt: 1_000,
      deadLetteredAt: 5_001,
    });
    // Filing again is a no-op: the record that got there before the crash stays as it was.
    expect(await dlq.get(filed.id as string)).toEqual(original);
    expect(log.of('dead-letter').map((e) => e.reason)).toEqual(['max-attempts', 'max-attempts']);
    expect(await unfinished(queue)).toBe(0);
  });

  it('marks a job dead-lettered in its state before filing it', async () => {
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
    const client = await queue.client;
    const state = parseAttemptState(await client.hget(queue.toKey(job.id as string), ATTEMPT_STATE_FIELD));
    const record = await dlq.get(job.id as string);
    expect(state.deadLettered).toEqual({
      reason: 'permanent',
      detail: record?.detail,
      lastError: record?.lastError,
      attemptsMade: 1,
      dependency: 'search',
      at: record?.deadLetteredAt,
    });
    expect(state.attempts).toBe(1);
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
      { connection: bed.connection, policy: fast, budget },
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
      createWorker('q', async () => {}, { connection: bed.connection, policy: fast, ...options } as never);
    expect(make({ policy: { maxAttempts: 'x' } })).toThrow(/policy must be/);
    expect(make({ dependencies: { index: '' } })).toThrow(/dependencies\.index must not be empty/);
    expect(make({ dependencies: { index: 'search {eu}' } })).toThrow(
      /dependencies\.index must not contain braces/,
    );
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
    await (lasting() as unknown as { close(): Promise<void> }).close();
    expect(() => createWorker('a:b', async () => {}, { connection: bed.connection, policy: fast })).toThrow(
      /queue name/,
    );
  });
});
