import { describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { seededRandom } from '../common/random.js';
import { TransientError } from '../errors/transient-error.js';
import { definePolicy } from '../policy/define-policy.js';
import type { JobEvents } from './events.js';
import type { AttemptStart, AttemptTrace, JobInstrumentation } from './instrumentation.js';
import type { JobHandle } from './job-handle.js';
import { JobRuntime } from './job-runtime.js';
import { MemoryDeadLetterStore } from './memory-dead-letter-store.js';

const policy = definePolicy({
  name: 'traced',
  maxAttempts: 2,
  backoff: { type: 'fixed', delayMs: 100 },
  jitter: 'none',
});

/** An instrumentation that writes down what the runtime tells it; `carrier` names the attempt. */
function recorder(options: { throwing?: boolean } = {}) {
  const log: string[] = [];
  const starts: AttemptStart[] = [];
  const instrumentation: JobInstrumentation = {
    startAttempt(start) {
      starts.push(start);
      const n = starts.length;
      const trace: AttemptTrace = {
        carrier: `attempt-${n}`,
        run: (fn) => {
          log.push(`${n} run`);
          return fn();
        },
        call: (dependency, fn) => {
          log.push(`${n} call ${dependency}`);
          return fn();
        },
        budgetAnswered: () => log.push(`${n} budget`),
        breakerAnswered: () => log.push(`${n} breaker`),
        decided: (decision, dependency) => {
          log.push(`${n} decided ${decision.action} ${dependency}`);
          if (options.throwing) throw new Error('broken tracer');
        },
        end: (outcome) => log.push(`${n} end ${outcome.type}`),
      };
      return trace;
    },
  };
  return { instrumentation, log, starts };
}

function handle(starts: number): JobHandle {
  return {
    ref: { queue: 'index', jobId: '7', createdAt: 0 },
    name: 'reindex',
    data: {},
    opts: {},
    starts,
    finishes: 0,
    stalls: 0,
    moveToDelayed: async () => {},
  };
}

function runtime(instrumentation: JobInstrumentation, store: MemoryDeadLetterStore, reported: string[] = []) {
  return new JobRuntime({
    queue: 'index',
    policy,
    dependencies: {},
    attempts: store,
    deadLetters: store,
    clock: new FakeClock(1_000),
    random: seededRandom(1),
    events: new EventBus<JobEvents>(),
    internalError: (error) => reported.push((error as Error).message),
    maxStalls: 1,
    instrumentation,
  });
}

const failing = async (ctx: { call<T>(d: string, fn: () => T): Promise<T> }) =>
  ctx.call('search', () => {
    throw new TransientError('search timed out');
  });

describe('JobRuntime with an instrumentation', () => {
  it('tells it each attempt, call and decision, and keeps the attempts it carries with the job and its dead letter', async () => {
    const store = new MemoryDeadLetterStore({ clock: new FakeClock(1_000) });
    const { instrumentation, log, starts } = recorder();
    const jobs = runtime(instrumentation, store);
    expect((await jobs.run(handle(1), failing)).type).toBe('delayed');
    expect(store.readAttempts({ queue: 'index', jobId: '7', createdAt: 0 })?.traceLinks).toEqual([
      'attempt-1',
    ]);
    expect((await jobs.run(handle(2), failing)).type).toBe('dead-lettered');
    expect(starts.map((s) => [s.attempt, s.earlierAttempts])).toEqual([
      [1, []],
      [2, ['attempt-1']],
    ]);
    expect(log).toEqual([
      '1 run',
      '1 call search',
      '1 decided retry search',
      '1 end delayed',
      '2 run',
      '2 call search',
      '2 decided dead-letter search',
      '2 end dead-lettered',
    ]);
    const [record] = store.list('index', { limit: 1 }).records;
    expect(record?.traceLinks).toEqual(['attempt-1', 'attempt-2']);
  });

  it('reports a tracer that throws, and settles the job as if untraced', async () => {
    const store = new MemoryDeadLetterStore({ clock: new FakeClock(1_000) });
    const reported: string[] = [];
    const jobs = runtime(recorder({ throwing: true }).instrumentation, store, reported);
    expect((await jobs.run(handle(1), failing)).type).toBe('delayed');
    expect(reported).toEqual(['broken tracer']);
    expect(store.readAttempts({ queue: 'index', jobId: '7', createdAt: 0 })?.attempts).toBe(1);
  });
});
