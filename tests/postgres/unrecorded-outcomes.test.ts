import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/common/clock.js';
import { EventBus } from '../../src/common/events.js';
import { seededRandom } from '../../src/common/random.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { isUnstorableValueError } from '../../src/errors/unstorable-value-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import type { JobEvents } from '../../src/runtime/events.js';
import { JobRuntime } from '../../src/runtime/job-runtime.js';
import { decodeStoredName } from '../../src/runtime/pending-outcome.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { QueuedJob } from '../helpers/queued-job.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 2 });
});
afterAll(async () => {
  await pool.end();
});

function runtimeOn(store: PostgresDeadLetterStore, maxAttempts = 1): JobRuntime {
  return new JobRuntime({
    queue: 'payments',
    policy: definePolicy({ name: 'payments', maxAttempts, backoff: { type: 'fixed', delayMs: 1_000 } }),
    dependencies: {},
    attempts: store,
    deadLetters: store,
    clock: new FakeClock(1_000),
    random: seededRandom(3),
    events: new EventBus<JobEvents>(),
    internalError: () => {},
    maxStalls: 1,
  });
}

describe('the PostgreSQL dead-letter store and values it cannot hold', () => {
  it('refuses U+0000 with an UnstorableValueError, which no retry fixes', async () => {
    const store = new PostgresDeadLetterStore({ connection: pool, schema: uniqueSchema() });
    const refusal = await Promise.resolve(
      store.file({ ...sampleDeadLetter('nul'), name: 'a\u0000b' }, { attempts: 1, deferrals: 0 }, 60_000),
    ).catch((error: unknown) => error);
    expect(isUnstorableValueError(refusal)).toBe(true);
    expect(String((refusal as Error).message)).toMatch(/SQLSTATE 22/);
  });

  it('files a job whose name, id and data hold U+0000 in its safe form, once, the processor run once', async () => {
    const store = new PostgresDeadLetterStore({ connection: pool, schema: uniqueSchema() });
    const runtime = runtimeOn(store);
    const job = new QueuedJob('pay\u00001', 'charge\u0000eu', { note: 'a\u0000b' });
    const outcome = await runtime.run(job.handle(), async () => {
      job.runs += 1;
      throw new TransientError('503');
    });
    expect(outcome).toMatchObject({ type: 'dead-lettered', reason: 'max-attempts' });
    expect(job.runs).toBe(1);
    const { records } = await store.list('payments', { limit: 10 });
    expect(records).toHaveLength(1);
    expect(decodeStoredName(records[0]?.name ?? '')).toBe('charge\u0000eu');
    expect(decodeStoredName(records[0]?.jobId ?? '')).toBe('pay\u00001');
    expect(records[0]?.data).toMatchObject({ stormguard: 'withheld' });
  });

  it('dead-letters a job whose id it cannot hold at its first failure, since its retries could not be counted', async () => {
    const store = new PostgresDeadLetterStore({ connection: pool, schema: uniqueSchema() });
    const runtime = runtimeOn(store, 3);
    const job = new QueuedJob('pay\u00002');
    const outcome = await runtime.run(job.handle(), async () => {
      job.runs += 1;
      throw new TransientError('503');
    });
    expect(outcome).toMatchObject({ type: 'dead-lettered', reason: 'permanent' });
    expect(job.runs).toBe(1);
    const { records } = await store.list('payments', { limit: 10 });
    expect(records.map((r) => [decodeStoredName(r.jobId), r.lastError.classification.reason])).toEqual([
      ['pay\u00002', 'unkept-state'],
    ]);
  });
});
