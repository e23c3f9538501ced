import { describe, expect, it } from 'vitest';
import { MemoryAuditLog } from '../audit/memory-audit-log.js';
import { FakeClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { seededRandom } from '../common/random.js';
import { PermanentError } from '../errors/permanent-error.js';
import { TransientError } from '../errors/transient-error.js';
import { definePolicy } from '../policy/define-policy.js';
import type { AttemptState, AttemptStateStore, JobRef } from './contracts.js';
import type { JobEvents } from './events.js';
import type { JobHandle } from './job-handle.js';
import { JobRuntime, type JobRuntimeSettings } from './job-runtime.js';
import { MemoryDeadLetterStore } from './memory-dead-letter-store.js';

const policy = definePolicy({
  name: 'runtime',
  maxAttempts: 3,
  backoff: { type: 'fixed', delayMs: 100 },
  jitter: 'none',
});

/** An attempt-state store that counts what it is asked, and can be told to refuse. */
class CountingStore implements AttemptStateStore {
  readonly calls: string[] = [];
  readonly states = new Map<string, AttemptState>();
  refuse = false;
  readAttempts(job: JobRef): AttemptState | undefined {
    this.calls.push(`read ${job.jobId}`);
    if (this.refuse) throw new Error('attempt state read refused');
    return this.states.get(job.jobId);
  }
  writeAttempts(job: JobRef, state: AttemptState): void {
    this.calls.push(`write ${job.jobId}`);
    if (this.refuse) throw new Error('attempt state write refused');
    this.states.set(job.jobId, state);
  }
  clearAttempts(job: JobRef): void {
    this.calls.push(`clear ${job.jobId}`);
    this.states.delete(job.jobId);
  }
}

function handle(overrides: Partial<JobHandle> = {}): JobHandle & { moves: number[] } {
  const moves: number[] = [];
  return {
    ref: { queue: 'index', jobId: '7', createdAt: 0 },
    name: 'index',
    data: { docId: 7 },
    opts: {},
    starts: 1,
    finishes: 0,
    stalls: 0,
    moveToDelayed: async (dueAtMs) => {
      moves.push(dueAtMs);
    },
    moves,
    ...overrides,
  };
}

function runtime(settings: Partial<JobRuntimeSettings> & Pick<JobRuntimeSettings, 'attempts'>) {
  const reported: string[] = [];
  const events = new EventBus<JobEvents>();
  const runtime = new JobRuntime({
    queue: 'index',
    policy,
    dependencies: {},
    deadLetters: undefined,
    clock: new FakeClock(1_000),
    random: seededRandom(1),
    events,
    internalError: (error) => reported.push((error as Error).message),
    maxStalls: 1,
    ...settings,
  });
  return { runtime, reported, events };
}

describe('JobRuntime', () => {
  it('reads no attempt state for a job on its first start, and writes none when it succeeds', async () => {
    const store = new CountingStore();
    const { runtime: jobs } = runtime({ attempts: store });
    expect(await jobs.run(handle(), async () => 'ok')).toEqual({ type: 'completed', value: 'ok' });
    expect(store.calls).toEqual([]);
  });

  it('retries with the state written before the move, due on the deciding clock, and clears the state when the job completes', async () => {
    const store = new CountingStore();
    const { runtime: jobs } = runtime({ attempts: store });
    const first = handle();
    expect(await jobs.run(first, async () => Promise.reject(new TransientError('blip')))).toEqual({
      type: 'delayed',
    });
    expect(first.moves).toEqual([1_100]);
    expect(store.states.get('7')).toEqual({
      attempts: 1,
      deferrals: 0,
      starts: 1,
      previousDelayMs: 100,
      firstFailedAt: 1_000,
      granted: true,
      history: [
        {
          attempt: 1,
          at: 1_000,
          dependency: 'index',
          error: { name: 'TransientError', message: 'blip' },
          classification: { retryable: true, reason: 'transient-error' },
          decision: 'retry',
          cause: 'backoff',
          delayMs: 100,
        },
      ],
    });
    expect(await jobs.run(handle({ starts: 2 }), async () => 'ok')).toEqual({
      type: 'completed',
      value: 'ok',
    });
    expect(store.calls).toEqual(['write 7', 'read 7', 'clear 7']);
  });

  it('files the dead letter with its final state, then only ends a job that comes back with the mark', async () => {
    const store = new MemoryDeadLetterStore({ clock: new FakeClock(1_000) });
    const { runtime: jobs, events } = runtime({ attempts: store, deadLetters: store });
    const reasons: string[] = [];
    events.on('dead-letter', (e) => reasons.push(`${e.dependency}:${e.reason}`));
    let runs = 0;
    const fail = async () => {
      runs++;
      throw new PermanentError('no such document');
    };
    const outcome = await jobs.run(handle(), fail);
    expect(outcome).toMatchObject({ type: 'dead-lettered', reason: 'permanent' });
    const recordId = outcome.type === 'dead-lettered' ? outcome.recordId : '';
    expect(store.get('index', recordId)).toMatchObject({ jobId: '7', reason: 'permanent', attemptsMade: 1 });
    // Its worker crashed before ending it: the queue brings it back, started a second time.
    expect(await jobs.run(handle({ starts: 2, stalls: 1 }), fail)).toEqual({
      type: 'dead-lettered',
      recordId,
      reason: 'permanent',
      message: 'dead-lettered (permanent): permanent-error is not retryable',
    });
    expect(runs).toBe(1);
    expect(reasons).toEqual(['index:permanent']);
    expect(store.count('index')).toBe(1);
  });

  it('tells what retention evicted when a filing made room, with an audit entry, and nothing when it did not', async () => {
    const audit = new MemoryAuditLog();
    const store = new MemoryDeadLetterStore({ clock: new FakeClock(1_000), audit });
    store.registerQueue('index', { maxCount: 1 });
    const { runtime: jobs, events } = runtime({ attempts: store, deadLetters: store });
    const seen: JobEvents['dead-letters-evicted'][] = [];
    events.on('dead-letters-evicted', (e) => seen.push(e));
    const fail = async () => {
      throw new PermanentError('no such document');
    };
    const first = await jobs.run(handle({ ref: { queue: 'index', jobId: '1', createdAt: 0 } }), fail);
    expect(first.type).toBe('dead-lettered');
    expect(seen).toEqual([]);
    const second = await jobs.run(handle({ ref: { queue: 'index', jobId: '2', createdAt: 0 } }), fail);
    const recordId = second.type === 'dead-lettered' ? second.recordId : '';
    expect(seen).toEqual([
      {
        queue: 'index',
        recordId,
        evicted: { count: 1, reasons: { permanent: 1 }, limits: { maxCount: 1 } },
      },
    ]);
    const { entries } = await audit.list({ limit: 10 });
    expect(entries.map((e) => [e.action, e.target, e.detail])).toEqual([
      [
        'dead-letters.evict',
        'index',
        { count: 1, reasons: { permanent: 1 }, limits: { maxCount: 1 }, filed: recordId },
      ],
    ]);
  });

  it('files every attempt with its decision and delay in the dead-letter record', async () => {
    const clock = new FakeClock(1_000);
    const store = new MemoryDeadLetterStore({ clock });
    const { runtime: jobs } = runtime({ attempts: store, deadLetters: store, clock });
    const errors = [
      new TransientError('timeout'),
      new TransientError('reset'),
      new TransientError('timeout'),
    ];
    let outcome: Awaited<ReturnType<typeof jobs.run>> | undefined;
    for (const [i, error] of errors.entries()) {
      outcome = await jobs.run(handle({ starts: i + 1 }), async () => Promise.reject(error));
      clock.advance(100);
    }
    expect(outcome).toMatchObject({ type: 'dead-lettered', reason: 'max-attempts' });
    const recordId = outcome?.type === 'dead-lettered' ? outcome.recordId : '';
    const entry = (attempt: number, message: string) => ({
      attempt,
      at: 900 + 100 * attempt,
      dependency: 'index',
      error: { name: 'TransientError', message },
      classification: { retryable: true, reason: 'transient-error' },
    });
    expect(store.get('index', recordId)).toMatchObject({
      attemptsMade: 3,
      history: [
        { ...entry(1, 'timeout'), decision: 'retry', cause: 'backoff', delayMs: 100 },
        { ...entry(2, 'reset'), decision: 'retry', cause: 'backoff', delayMs: 100 },
        { ...entry(3, 'timeout'), decision: 'dead-letter', cause: 'max-attempts' },
      ],
    });
    const last = (store.get('index', recordId) as { history: object[] }).history[2];
    expect(last).not.toHaveProperty('delayMs');
  });

  it('fails a terminal decision when nothing holds dead letters, and clears the state it had', async () => {
    const store = new CountingStore();
    store.states.set('7', { attempts: 2, deferrals: 0, firstFailedAt: 500 });
    const { runtime: jobs } = runtime({ attempts: store });
    expect(
      await jobs.run(handle({ starts: 3 }), async () => Promise.reject(new TransientError('down'))),
    ).toEqual({
      type: 'failed',
      message: 'max-attempts: 3 of 3 attempts made; last error: down',
    });
    expect(store.calls).toEqual(['read 7', 'clear 7']);
  });

  it('delays the job without charging it when a store refuses the bookkeeping, and reports the refusal', async () => {
    const store = new CountingStore();
    store.refuse = true;
    const { runtime: jobs, reported } = runtime({ attempts: store });
    const job = handle();
    expect(await jobs.run(job, async () => Promise.reject(new TransientError('blip')))).toEqual({
      type: 'delayed',
    });
    expect(job.moves).toEqual([6_000]);
    expect(reported).toEqual(['attempt state write refused']);
    const again = handle({ starts: 2 });
    expect(await jobs.run(again, async () => 'never')).toEqual({ type: 'delayed' });
    expect(reported).toEqual(['attempt state write refused', 'attempt state read refused']);
  });

  it('hands back a delayed outcome, never the store error, when neither the state nor the move can be written', async () => {
    const store = new CountingStore();
    store.refuse = true;
    const { runtime: jobs, reported } = runtime({ attempts: store });
    const job = handle({
      moveToDelayed: async () => {
        throw new Error('Missing lock for job 7. moveToDelayed');
      },
    });
    expect(await jobs.run(job, async () => Promise.reject(new TransientError('blip')))).toEqual({
      type: 'delayed',
    });
    expect(reported).toEqual(['attempt state write refused', 'Missing lock for job 7. moveToDelayed']);
  });

  it('dead-letters a job that stalled more often than allowed without running it, as max-attempts', async () => {
    const store = new MemoryDeadLetterStore();
    const { runtime: jobs } = runtime({ attempts: store, deadLetters: store, maxStalls: 2 });
    let runs = 0;
    const work = async () => {
      runs++;
      return 'ok';
    };
    expect(await jobs.run(handle({ starts: 3, stalls: 2 }), work)).toEqual({
      type: 'completed',
      value: 'ok',
    });
    const outcome = await jobs.run(
      handle({ ref: { queue: 'index', jobId: '8', createdAt: 0 }, starts: 4, stalls: 3 }),
      work,
    );
    expect(outcome).toMatchObject({ type: 'dead-lettered', reason: 'max-attempts' });
    expect(runs).toBe(1);
    expect(store.list('index', { limit: 10 }).records).toMatchObject([
      {
        jobId: '8',
        detail:
          'stalled 3 times, more than maxStalledCount (2) allows: its worker crashed or blocked while running it',
        lastError: { name: 'StalledJobError', classification: { retryable: false, reason: 'stalled' } },
      },
    ]);
  });

  it('passes the errors the adapter asks for back untouched, with no bookkeeping', async () => {
    const store = new CountingStore();
    const control = Object.assign(new Error('moved'), { name: 'DelayedError' });
    const { runtime: jobs } = runtime({ attempts: store, isPassThrough: (e) => e === control });
    expect(await jobs.run(handle(), async () => Promise.reject(control))).toEqual({
      type: 'pass-through',
      error: control,
    });
    expect(store.calls).toEqual([]);
  });
});
