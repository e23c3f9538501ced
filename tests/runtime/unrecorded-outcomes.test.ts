import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/common/clock.js';
import { EventBus } from '../../src/common/events.js';
import { seededRandom } from '../../src/common/random.js';
import { InvalidInputError } from '../../src/errors/invalid-input-error.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { UnstorableValueError } from '../../src/errors/unstorable-value-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import type { DeadLetterRecord, StoredDeadLetter } from '../../src/runtime/contracts.js';
import type { JobEvents } from '../../src/runtime/events.js';
import { JobRuntime, type JobRuntimeSettings } from '../../src/runtime/job-runtime.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { decodeStoredName } from '../../src/runtime/pending-outcome.js';
import type { RunOutcome } from '../../src/runtime/run-outcome.js';
import { FlakyStore, QueuedJob } from '../helpers/queued-job.js';

const MINUTE = 60_000;

function setup(settings: Partial<JobRuntimeSettings> & { store: MemoryDeadLetterStore }, maxAttempts = 1) {
  const clock = new FakeClock(1_000);
  const events = new EventBus<JobEvents>();
  const reported: unknown[] = [];
  const seen: Array<{ event: string; payload: unknown }> = [];
  for (const event of ['dead-letter', 'unfiled', 'outcome-pending', 'retry'] as const)
    events.on(event, (payload) => seen.push({ event, payload }));
  const { store, ...rest } = settings;
  const runtime = new JobRuntime({
    queue: 'payments',
    policy: definePolicy({
      name: 'payments',
      maxAttempts,
      maxAgeMs: '1h',
      backoff: { type: 'fixed', delayMs: 1_000 },
      jitter: 'none',
    }),
    dependencies: {},
    attempts: store,
    deadLetters: store,
    clock,
    random: seededRandom(7),
    events,
    internalError: (error) => reported.push(error),
    maxStalls: 1,
    ...rest,
  });
  return { runtime, clock, reported, seen };
}

async function runOnce(runtime: JobRuntime, job: QueuedJob, error: unknown): Promise<RunOutcome<never>> {
  return runtime.run(job.handle(), async () => {
    job.runs += 1;
    throw error;
  });
}

async function records(store: MemoryDeadLetterStore): Promise<StoredDeadLetter[]> {
  return (await store.list('payments', { limit: 100 })).records;
}

describe('an outcome stormguard cannot record', () => {
  it('files the safe form of a record the redact hook refuses, and never runs the processor again', async () => {
    const store = new MemoryDeadLetterStore({
      redact: (record) => {
        if ((record.data as { card?: string }).card)
          throw new TypeError(`cannot parse card in ${JSON.stringify(record.data)}`);
        return record;
      },
    });
    const { runtime, seen, reported } = setup({ store });
    const job = new QueuedJob('pay-1');
    const outcome = await runOnce(runtime, job, new TransientError('503 token=s3cr3t'));
    expect(outcome).toMatchObject({ type: 'dead-lettered', reason: 'max-attempts' });
    expect(job.runs).toBe(1);
    const [record] = await records(store);
    expect(record?.data).toEqual({ stormguard: 'withheld', why: 'the redaction hook failed (TypeError)' });
    expect(record?.lastError.message).toBe('[withheld by stormguard: the redaction hook failed (TypeError)]');
    expect(JSON.stringify(record)).not.toContain('4111');
    expect(JSON.stringify(record)).not.toContain('s3cr3t');
    expect(seen.filter((s) => s.event === 'dead-letter').map((s) => s.payload)).toEqual([
      { queue: 'payments', task: 'charge', dependency: 'charge', reason: 'max-attempts', safeForm: true },
    ]);
    // The runtime reports the refusal through the same hook: the hook's own text (the card) never leaves.
    expect(reported.map(String).join('\n')).not.toContain('4111');
    // The job comes back (a worker crashed before ending it): it is ended, not run.
    expect(await runOnce(runtime, job, new Error('never'))).toMatchObject({ type: 'dead-lettered' });
    expect(job.runs).toBe(1);
  });

  it('keeps a dead letter the store refuses while it is down in the job, and files it after a 10-minute outage without running the processor again', async () => {
    const store = new FlakyStore();
    const { runtime, clock, seen } = setup({ store });
    store.down = true;
    const jobs = Array.from({ length: 50 }, (_, i) => new QueuedJob(`pay-${i}`));
    const outcomes: Array<RunOutcome<never>> = [];
    for (const job of jobs) outcomes.push(await runOnce(runtime, job, new TransientError('503')));
    expect(outcomes.every((o) => o.type === 'delayed')).toBe(true);
    // Each job runs again when its move says, until the store is back after 10 minutes.
    const upAt = clock.now() + 10 * MINUTE;
    const done = new Map<string, RunOutcome<never>>();
    // Bounded: an outcome that is never written would loop for ever.
    for (let round = 0; round < 200 && done.size < jobs.length; round++) {
      const due = jobs.filter((j) => !done.has(j.id)).map((j) => j.moves.at(-1) ?? 0);
      clock.set(Math.min(...due));
      store.down = clock.now() < upAt;
      for (const job of jobs) {
        if (done.has(job.id) || (job.moves.at(-1) ?? 0) > clock.now()) continue;
        const outcome = await runOnce(runtime, job, new Error('the processor must not run again'));
        if (outcome.type !== 'delayed') done.set(job.id, outcome);
      }
    }
    expect([...done.values()].every((o) => o.type === 'dead-lettered')).toBe(true);
    expect(jobs.map((j) => j.runs)).toEqual(jobs.map(() => 1));
    expect(await store.count('payments')).toBe(50);
    expect(seen.filter((s) => s.event === 'unfiled')).toEqual([]);
    // 5 s doubling to 5 minutes, from the first refusal (t = 1 s).
    const gaps = jobs[0]?.moves.map((at, i, all) => at - (i === 0 ? 1_000 : (all[i - 1] ?? 0)));
    expect(gaps).toEqual([5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000]);
  });

  it('writes a retry the attempt store refused at the next run, without running the processor, then runs it at its due time', async () => {
    const store = new FlakyStore();
    const { runtime, clock } = setup({ store }, 3);
    const job = new QueuedJob('pay-2');
    const original = store.writeAttempts.bind(store);
    let refuse = true;
    store.writeAttempts = (ref, state, ttl) => {
      if (refuse) throw new Error('connect ETIMEDOUT');
      return original(ref, state, ttl);
    };
    expect(await runOnce(runtime, job, new TransientError('503'))).toEqual({ type: 'delayed' });
    expect(job.note?.pending?.write.type).toBe('retry');
    refuse = false;
    clock.set(job.moves.at(-1) ?? 0);
    expect(await runOnce(runtime, job, new Error('must not run'))).toEqual({ type: 'delayed' });
    expect(job.runs).toBe(1);
    expect(job.note).toBeUndefined();
    expect((await store.readAttempts({ queue: 'payments', jobId: 'pay-2', createdAt: 0 }))?.attempts).toBe(1);
    expect(await runtime.run(job.handle(), async () => 'charged')).toEqual({
      type: 'completed',
      value: 'charged',
    });
  });

  it('files a name and an id a store cannot hold encoded losslessly, the data and error text as markers', async () => {
    const store = new FlakyStore();
    store.refuse = (record) =>
      JSON.stringify(record).includes('\\u0000')
        ? new UnstorableValueError('text and jsonb cannot hold U+0000', 'test store')
        : undefined;
    const { runtime } = setup({ store });
    const job = new QueuedJob('pay\u00003', 'charge\u0000eu', { note: 'a\u0000b' });
    expect(await runOnce(runtime, job, new TransientError('bad\u0000byte'))).toMatchObject({
      type: 'dead-lettered',
    });
    const [record] = await records(store);
    expect(record?.name).not.toContain('\u0000');
    expect(decodeStoredName(record?.name ?? '')).toBe('charge\u0000eu');
    expect(decodeStoredName(record?.jobId ?? '')).toBe('pay\u00003');
    expect(record?.data).toEqual({
      stormguard: 'withheld',
      why: 'test store cannot hold it: text and jsonb cannot hold U+0000',
    });
  });

  it('fails the job, never re-run, with an unfiled event, when even the safe form is refused', async () => {
    const store = new FlakyStore();
    store.refuse = () => new UnstorableValueError('nothing fits', 'test store');
    const { runtime, seen } = setup({ store });
    const job = new QueuedJob('pay-4');
    const outcome = await runOnce(runtime, job, new TransientError('503 token=s3cr3t'));
    expect(outcome).toEqual({
      type: 'failed',
      message:
        'not recorded: stormguard could not store its dead letter (max-attempts: 1 of 1 attempts made): test store cannot hold it: nothing fits; last error: [withheld by stormguard: test store cannot hold it: nothing fits]',
    });
    expect(seen.filter((s) => s.event === 'unfiled').map((s) => s.payload)).toEqual([
      {
        queue: 'payments',
        task: 'charge',
        dependency: 'charge',
        reason: 'max-attempts',
        errorClass: 'UnstorableValueError',
        refusal: 'test store cannot hold it: nothing fits',
      },
    ]);
    expect(job.runs).toBe(1);
  });

  it('runs the processor again at most twice when the budget cannot decide, then dead-letters the job', async () => {
    const store = new FlakyStore();
    const budget = {
      onExhausted: 'dead-letter' as const,
      trySpend: () => {
        throw new Error('budget store: connect ECONNREFUSED');
      },
      recordSuccess: () => {},
      flush: async () => {},
    };
    const { runtime, clock } = setup({ store, budget }, 5);
    const job = new QueuedJob('pay-5');
    const outcomes: string[] = [];
    for (let run = 0; run < 5; run++) {
      const outcome = await runOnce(runtime, job, new TransientError('503'));
      outcomes.push(outcome.type);
      if (outcome.type !== 'delayed') break;
      clock.set(job.moves.at(-1) ?? 0);
    }
    expect(outcomes).toEqual(['delayed', 'delayed', 'dead-lettered']);
    expect(job.runs).toBe(3);
    const [record] = await records(store);
    expect(record?.reason).toBe('budget-exhausted');
  });

  it('dead-letters at once when a gate refuses for good (a name it cannot take)', async () => {
    const store = new FlakyStore();
    const breaker = {
      check: () => {
        throw new InvalidInputError('breaker: dependency name " " is invalid');
      },
      execute: <T>(_d: string, fn: () => Promise<T>) => fn(),
    };
    const { runtime } = setup({ store, breaker }, 5);
    const job = new QueuedJob('pay-6', ' ');
    expect(await runOnce(runtime, job, new TransientError('503'))).toMatchObject({
      type: 'dead-lettered',
      reason: 'budget-exhausted',
    });
    expect(job.runs).toBe(1);
  });

  it('fails the job in the end when a transient refusal outlives its max age', async () => {
    const store = new FlakyStore();
    store.down = true;
    const { runtime, clock, seen } = setup({ store });
    const job = new QueuedJob('pay-7');
    let outcome = await runOnce(runtime, job, new TransientError('503'));
    for (let round = 0; round < 200 && outcome.type === 'delayed'; round++) {
      clock.set(job.moves.at(-1) ?? 0);
      outcome = await runOnce(runtime, job, new Error('must not run'));
    }
    expect(outcome.type).toBe('failed');
    expect(clock.now()).toBeLessThanOrEqual(3_600_000);
    expect(seen.filter((s) => s.event === 'unfiled')).toHaveLength(1);
    expect(job.runs).toBe(1);
  });
});

describe('secrets in errors', () => {
  const redact = (record: DeadLetterRecord): DeadLetterRecord => ({
    ...record,
    lastError: {
      ...record.lastError,
      message: record.lastError.message.replace(/token=\w+/g, 'token=[redacted]'),
    },
  });

  it("hands the queue a dead-lettered or failed job's error through the store's redact hook", async () => {
    const store = new MemoryDeadLetterStore({ redact });
    const { runtime } = setup({ store });
    const dead = await runOnce(runtime, new QueuedJob('pay-8'), new TransientError('503 token=s3cr3t'));
    expect(dead).toMatchObject({
      type: 'dead-lettered',
      message: 'dead-lettered (max-attempts): 1 of 1 attempts made; last error: 503 token=[redacted]',
    });
  });

  it("uses the tracer's redactError when the store has no hook, and the error's class alone when it throws", async () => {
    const store = new MemoryDeadLetterStore();
    const instrumentation = {
      startAttempt: () => undefined,
      redactError: (e: { name: string; message: string }) => {
        if (e.message.includes('boom')) throw new Error('hook broke');
        return { name: e.name, message: e.message.replace(/token=\w+/g, 'token=[redacted]') };
      },
    };
    const { runtime } = setup({ store, instrumentation });
    expect(
      await runOnce(runtime, new QueuedJob('pay-9'), new TransientError('503 token=s3cr3t')),
    ).toMatchObject({
      message: 'dead-lettered (max-attempts): 1 of 1 attempts made; last error: 503 token=[redacted]',
    });
    expect(
      await runOnce(runtime, new QueuedJob('pay-10'), new TransientError('boom token=s3cr3t')),
    ).toMatchObject({
      message:
        'dead-lettered (max-attempts): 1 of 1 attempts made; last error: TransientError (redaction failed)',
    });
  });

  it("keeps an outcome in the job's own record with its error text redacted", async () => {
    const store = new FlakyStore({ redact });
    store.down = true;
    const { runtime, clock } = setup({ store });
    const job = new QueuedJob('pay-12');
    expect(await runOnce(runtime, job, new TransientError('503 token=s3cr3t'))).toEqual({ type: 'delayed' });
    expect(JSON.stringify(job.note)).toContain('token=[redacted]');
    expect(JSON.stringify(job.note)).not.toContain('s3cr3t');
    store.down = false;
    clock.set(job.moves.at(-1) ?? 0);
    expect(await runOnce(runtime, job, new Error('must not run'))).toMatchObject({ type: 'dead-lettered' });
    const [record] = await records(store);
    expect(record?.lastError.message).toBe('503 token=[redacted]');
  });

  it('reports its own bookkeeping errors redacted', async () => {
    const store = new FlakyStore({ redact });
    store.refuse = () => new Error('write refused for job with token=s3cr3t');
    const { runtime, reported } = setup({ store });
    await runOnce(runtime, new QueuedJob('pay-11'), new TransientError('503'));
    expect(reported.length).toBeGreaterThan(0);
    expect(reported.map((e) => `${(e as Error).message} ${(e as Error).stack}`).join('\n')).not.toContain(
      's3cr3t',
    );
  });
});
