/**
 * The dead-letter store contract, written once and run against every implementation (memory, Redis,
 * PostgreSQL) with no branch for any of them: a store that needs one has a bug or the contract a gap.
 * Every case runs on a FakeClock that the store takes as its time (the Redis and PostgreSQL stores through
 * their test-only clock option), so retention and claims are exact.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import { isValidationError } from '../errors/validation-error.js';
import type {
  AttemptEntry,
  AttemptState,
  DeadLetterFilter,
  DeadLetterRecord,
  DeadLetterStore,
  StoredDeadLetter,
} from './contracts.js';
import { searchDeadLetters } from './dead-letter-search.js';

/** One fresh, empty store on the given clock, and what the suite needs to reach inside it. */
export interface DeadLetterStoreHarness {
  store: DeadLetterStore;
  /** Overwrites a stored record with JSON that is not a record (`{"jobId":42}`), as a hand edit would. */
  damage(queue: string, id: string): Promise<void>;
  close(): Promise<void>;
}

export type OpenDeadLetterStore = (clock: FakeClock) => Promise<DeadLetterStoreHarness>;

const T0 = 1_700_000_000_000;
const DAY = 86_400_000;
const STATE: AttemptState = { attempts: 5, deferrals: 1, starts: 6, firstFailedAt: T0 - 5_000 };

/** A dead-letter record as a worker files it; `overrides` change what a case cares about. */
export function sampleDeadLetter(jobId: string, overrides: Partial<DeadLetterRecord> = {}): DeadLetterRecord {
  return {
    queue: 'index',
    jobId,
    createdAt: T0 - 10_000,
    name: 'reindex',
    data: { docId: jobId, nested: { list: [1, 2, 3], text: 'é "quoted" \n' } },
    opts: { attempts: 5, backoff: { type: 'exponential', delay: 1_000 }, jobId },
    reason: 'max-attempts',
    detail: '5 of 5 attempts used',
    lastError: {
      name: 'TransientError',
      message: 'search timed out',
      stack: 'TransientError: search timed out\n    at reindex',
      classification: { retryable: true, reason: 'ETIMEDOUT' },
    },
    attemptsMade: 5,
    dependency: 'search',
    firstFailedAt: T0 - 5_000,
    deadLetteredAt: T0,
    replays: 0,
    ...overrides,
  };
}

/** A trace context as a tracer keeps it with a job (opaque to the store). */
const TRACE_LINK = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** Registers the dead-letter store conformance cases under `describe(name)`. */
export function describeDeadLetterStore(name: string, open: OpenDeadLetterStore): void {
  describe(`${name} conformance`, () => {
    let harness: DeadLetterStoreHarness | undefined;
    let clock: FakeClock;

    async function setup(): Promise<DeadLetterStore> {
      clock = new FakeClock(T0);
      harness = await open(clock);
      return harness.store;
    }

    afterEach(async () => {
      await harness?.close();
      harness = undefined;
    });

    async function file(store: DeadLetterStore, record: DeadLetterRecord, ttlMs = DAY) {
      return store.file(record, STATE, ttlMs);
    }

    /** Every entry of a listing, page by page, as "id:jobId" (malformed ones as "id:malformed"). */
    async function listAll(
      store: DeadLetterStore,
      queue: string,
      filter: DeadLetterFilter & { newestFirst?: boolean } = {},
      limit = 2,
    ): Promise<string[]> {
      const out: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 100; pages++) {
        const page = await store.list(queue, { ...filter, limit, ...(cursor ? { cursor } : {}) });
        expect(page.records.length + page.malformed.length).toBeLessThanOrEqual(limit);
        const entries = [
          ...page.records.map((r) => ({ id: r.id, label: `${r.id}:${r.jobId}` })),
          ...page.malformed.map((m) => ({ id: m.id, label: `${m.id}:malformed` })),
        ];
        out.push(...entries.map((e) => e.label));
        if (!page.next) return out;
        cursor = page.next;
      }
      throw new Error('listing did not end after 100 pages');
    }

    it('files a record and returns it as given, with the id the store assigned', async () => {
      const store = await setup();
      const record = sampleDeadLetter('42', {
        idempotencyKey: 'doc-42',
        replayedFrom: '3',
        traceLinks: [TRACE_LINK],
      });
      const { id, created } = await file(store, record);
      expect(created).toBe(true);
      expect(typeof id).toBe('string');
      expect(await store.get('index', id)).toEqual({ ...record, id });
      expect(await store.get('index', 'no-such-id')).toBeUndefined();
      expect(await store.get('other', id)).toBeUndefined();
      expect(await store.count('index')).toBe(1);
    });

    it("keeps a record's attempt history as filed, and reads a record without one", async () => {
      const store = await setup();
      const history: AttemptEntry[] = [
        {
          attempt: 1,
          at: T0 - 5_000,
          dependency: 'search',
          error: { name: 'TransientError', message: 'search timed out "after" 2s\n' },
          classification: { retryable: true, reason: 'ETIMEDOUT' },
          decision: 'retry',
          cause: 'backoff',
          delayMs: 1_000,
        },
        {
          attempt: 2,
          at: T0 - 3_000,
          dependency: 'search',
          error: { name: 'BrokenCircuitError', message: 'breaker for search is open' },
          classification: { retryable: true, reason: 'breaker-open' },
          decision: 'defer',
          cause: 'breaker-open',
          delayMs: 30_000,
        },
        {
          attempt: 3,
          at: T0,
          dependency: 'search',
          error: { name: 'TransientError', message: 'search timed out' },
          classification: { retryable: true, reason: 'ETIMEDOUT' },
          decision: 'dead-letter',
          cause: 'max-attempts',
        },
      ];
      const withHistory = sampleDeadLetter('7', { history });
      const { id } = await store.file(withHistory, { ...STATE, history }, DAY);
      expect(await store.get('index', id)).toEqual({ ...withHistory, id });
      const page = await store.list('index', { limit: 10 });
      expect(page.records[0]?.history).toEqual(history);
      // The record holds the history; the final state, which only ends the job, does not.
      expect((await store.readAttempts(withHistory))?.history).toBeUndefined();

      const before = sampleDeadLetter('8');
      const old = await file(store, before);
      const read = await store.get('index', old.id);
      expect(read).toEqual({ ...before, id: old.id });
      expect(read && 'history' in read).toBe(false);
    });

    it('keeps the attempt history of a job that is still retrying in its attempt state', async () => {
      const store = await setup();
      const job = { queue: 'index', jobId: '9', createdAt: T0 };
      const history: AttemptEntry[] = [
        {
          attempt: 1,
          at: T0,
          dependency: 'mail',
          error: { name: 'Error', message: 'connect ECONNREFUSED' },
          classification: { retryable: true, reason: 'ECONNREFUSED' },
          decision: 'retry',
          cause: 'backoff',
          delayMs: 200,
        },
      ];
      await store.writeAttempts(job, { attempts: 1, deferrals: 0, history }, DAY);
      expect(await store.readAttempts(job)).toEqual({ attempts: 1, deferrals: 0, history });
    });

    it('writes the final attempt state with the dead-lettered mark in the same step', async () => {
      const store = await setup();
      const record = sampleDeadLetter('42');
      const { id } = await store.file(record, { ...STATE, deadLettered: undefined }, 60_000);
      expect(await store.readAttempts(record)).toEqual({
        ...STATE,
        deadLettered: { reason: 'max-attempts', detail: '5 of 5 attempts used', recordId: id, at: T0 },
      });
      clock.advance(60_000);
      expect(await store.readAttempts(record)).toBeUndefined();
      expect((await store.get('index', id)) as StoredDeadLetter).toMatchObject({ jobId: '42' });
    });

    it('files the same job (same id and createdAt) once, even after its record was replayed', async () => {
      const store = await setup();
      const first = await file(store, sampleDeadLetter('7', { detail: 'first' }));
      const again = await file(store, sampleDeadLetter('7', { detail: 'second' }));
      expect(again).toEqual({ id: first.id, created: false });
      expect(await store.count('index')).toBe(1);
      expect(((await store.get('index', first.id)) as StoredDeadLetter).detail).toBe('first');
      expect(await store.completeReplay('index', first.id)).toBe(true);
      expect(await file(store, sampleDeadLetter('7'))).toEqual({ id: first.id, created: false });
      expect(await store.count('index')).toBe(0);
    });

    it('gives a reused job id (another createdAt) a record of its own and leaves the first as it was', async () => {
      const store = await setup();
      const older = sampleDeadLetter('order-1', { createdAt: T0 - 50_000, detail: 'older' });
      const newer = sampleDeadLetter('order-1', { createdAt: T0 - 1_000, detail: 'newer' });
      const a = await file(store, older);
      const b = await file(store, newer);
      expect(b.created).toBe(true);
      expect(b.id).not.toBe(a.id);
      expect(await store.get('index', a.id)).toEqual({ ...older, id: a.id });
      expect(await store.get('index', b.id)).toEqual({ ...newer, id: b.id });
      expect((await store.readAttempts(older))?.deadLettered?.recordId).toBe(a.id);
      expect((await store.readAttempts(newer))?.deadLettered?.recordId).toBe(b.id);
      expect(await listAll(store, 'index')).toEqual([`${a.id}:order-1`, `${b.id}:order-1`]);
    });

    it('never reuses a record id, even once every record is gone', async () => {
      const store = await setup();
      const ids = new Set<string>();
      for (let i = 0; i < 5; i++) {
        const { id } = await file(store, sampleDeadLetter(`j${i}`));
        expect(ids.has(id)).toBe(false);
        ids.add(id);
        await store.remove('index', id);
      }
      expect(await store.count('index')).toBe(0);
    });

    it('keeps attempt state per job: a reused id with another createdAt is another job', async () => {
      const store = await setup();
      const a = { queue: 'index', jobId: 'x', createdAt: 1 };
      const b = { queue: 'index', jobId: 'x', createdAt: 2 };
      const other = { queue: 'other', jobId: 'x', createdAt: 1 };
      expect(await store.readAttempts(a)).toBeUndefined();
      await store.writeAttempts(
        a,
        { attempts: 1, deferrals: 0, previousDelayMs: 400, traceLinks: [TRACE_LINK] },
        10_000,
      );
      await store.writeAttempts(b, { attempts: 3, deferrals: 2 }, 10_000);
      expect(await store.readAttempts(a)).toEqual({
        attempts: 1,
        deferrals: 0,
        previousDelayMs: 400,
        traceLinks: [TRACE_LINK],
      });
      expect(await store.readAttempts(b)).toEqual({ attempts: 3, deferrals: 2 });
      expect(await store.readAttempts(other)).toBeUndefined();
      await store.clearAttempts(a);
      expect(await store.readAttempts(a)).toBeUndefined();
      expect(await store.readAttempts(b)).toEqual({ attempts: 3, deferrals: 2 });
      clock.advance(10_000);
      expect(await store.readAttempts(b)).toBeUndefined();
    });

    it('lists in dead-letter time order (ties by id), oldest or newest first, page by page', async () => {
      const store = await setup();
      const at = [T0 + 30, T0 + 10, T0 + 20, T0 + 20, T0 + 20, T0];
      const ids: string[] = [];
      for (const [i, t] of at.entries())
        ids.push((await file(store, sampleDeadLetter(`j${i}`, { deadLetteredAt: t }))).id);
      const oldestFirst = [5, 1, 2, 3, 4, 0].map((i) => `${ids[i]}:j${i}`);
      expect(await listAll(store, 'index', {}, 1)).toEqual(oldestFirst);
      expect(await listAll(store, 'index', {}, 4)).toEqual(oldestFirst);
      expect(await listAll(store, 'index', {}, 100)).toEqual(oldestFirst);
      expect(await listAll(store, 'index', { newestFirst: true }, 2)).toEqual([...oldestFirst].reverse());
      expect((await store.list('index', { limit: 0 })).records).toEqual([]);
    });

    it('continues a listing after the entries of the previous page were removed (as replay does)', async () => {
      const store = await setup();
      const ids: string[] = [];
      for (let i = 0; i < 7; i++)
        ids.push((await file(store, sampleDeadLetter(`j${i}`, { deadLetteredAt: T0 + (i % 3) }))).id);
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 20; pages++) {
        const page = await store.list('index', { limit: 2, ...(cursor ? { cursor } : {}) });
        for (const r of page.records) {
          seen.push(r.jobId);
          await store.completeReplay('index', r.id);
        }
        if (!page.next) break;
        cursor = page.next;
      }
      expect(seen).toEqual(['j0', 'j3', 'j6', 'j1', 'j4', 'j2', 'j5']);
      expect(await store.count('index')).toBe(0);
    });

    it('filters by reason, dependency, name and time, alone and together, in listings and counts', async () => {
      const store = await setup();
      const specs: [string, Partial<DeadLetterRecord>][] = [
        ['a', { reason: 'budget-exhausted', dependency: 'search', deadLetteredAt: T0 + 1 }],
        ['b', { reason: 'permanent', dependency: 'mail', name: 'welcome', deadLetteredAt: T0 + 2 }],
        ['c', { reason: 'budget-exhausted', dependency: 'mail', deadLetteredAt: T0 + 3 }],
        ['d', { reason: 'budget-exhausted', dependency: 'search', name: 'welcome', deadLetteredAt: T0 + 4 }],
        ['e', { reason: 'breaker-open', dependency: 'eu:search', deadLetteredAt: T0 + 5 }],
      ];
      const idOf = new Map<string, string>();
      for (const [jobId, o] of specs) idOf.set(jobId, (await file(store, sampleDeadLetter(jobId, o))).id);
      const jobs = async (filter: DeadLetterFilter) =>
        (await listAll(store, 'index', filter)).map((label) => label.split(':').slice(1).join(':'));
      const cases: [DeadLetterFilter, string[]][] = [
        [{}, ['a', 'b', 'c', 'd', 'e']],
        [{ reason: 'budget-exhausted' }, ['a', 'c', 'd']],
        [{ dependency: 'search' }, ['a', 'd']],
        [{ dependency: 'eu:search' }, ['e']],
        [{ name: 'welcome' }, ['b', 'd']],
        [{ since: T0 + 3 }, ['c', 'd', 'e']],
        [{ before: T0 + 3 }, ['a', 'b']],
        [{ since: T0 + 2, before: T0 + 5 }, ['b', 'c', 'd']],
        [{ reason: 'budget-exhausted', dependency: 'search' }, ['a', 'd']],
        [{ reason: 'budget-exhausted', dependency: 'mail', name: 'reindex' }, ['c']],
        [{ reason: 'budget-exhausted', name: 'welcome', since: T0 + 4 }, ['d']],
        [{ reason: 'permanent', dependency: 'search' }, []],
        [{ name: 'nobody' }, []],
      ];
      for (const [filter, expected] of cases) {
        expect(await jobs(filter), JSON.stringify(filter)).toEqual(expected);
        expect(await store.count('index', filter), JSON.stringify(filter)).toBe(expected.length);
      }
      await store.remove('index', idOf.get('d') as string);
      expect(await jobs({ reason: 'budget-exhausted', dependency: 'search' })).toEqual(['a']);
      expect(await store.count('index', { name: 'welcome' })).toBe(1);
    });

    it('refuses a bad filter or cursor, naming it', async () => {
      const store = await setup();
      await expect((async () => store.count('index', { reason: 'tired' as never }))()).rejects.toSatisfy(
        isValidationError,
      );
      await expect((async () => store.list('index', { limit: 5, cursor: 'junk' }))()).rejects.toThrow(
        /cursor/,
      );
    });

    it('keeps queues, dependencies and names with separators and braces apart', async () => {
      const store = await setup();
      await file(store, sampleDeadLetter('1', { queue: 'shop', dependency: 'eu:search' }));
      await file(store, sampleDeadLetter('2', { queue: 'shop:eu', dependency: 'search' }));
      await file(store, sampleDeadLetter('3', { queue: 'shop}{x', name: 'a b\nc', dependency: '{search}' }));
      expect(await store.count('shop')).toBe(1);
      expect(await store.count('shop:eu')).toBe(1);
      expect(await store.count('shop', { dependency: 'search' })).toBe(0);
      expect(await store.count('shop:eu', { dependency: 'search' })).toBe(1);
      expect(await store.count('shop}{x', { name: 'a b\nc', dependency: '{search}' })).toBe(1);
      expect((await store.queues()).map((q) => q.queue)).toEqual(['shop', 'shop:eu', 'shop}{x']);
    });

    it('registers queues so tools can list them, and reading never registers one', async () => {
      const store = await setup();
      expect(await store.queues()).toEqual([]);
      expect(await store.count('ghost')).toBe(0);
      expect((await store.list('ghost', { limit: 10 })).records).toEqual([]);
      expect(await store.get('ghost', '1')).toBeUndefined();
      expect(await store.readAttempts({ queue: 'ghost', jobId: '1', createdAt: 1 })).toBeUndefined();
      expect(await store.queue('ghost')).toBeUndefined();
      expect(await store.queues()).toEqual([]);
      await store.registerQueue('mail', { maxCount: 10 });
      clock.advance(5);
      await store.registerQueue('index');
      await store.registerQueue('mail');
      await file(store, sampleDeadLetter('1'));
      expect(await store.queues()).toEqual([
        { queue: 'index', count: 1, evicted: 0, registeredAt: T0 + 5, retention: {} },
        { queue: 'mail', count: 0, evicted: 0, registeredAt: T0, retention: { maxCount: 10 } },
      ]);
      expect(await store.queue('mail')).toMatchObject({ queue: 'mail', retention: { maxCount: 10 } });
    });

    it('files into a queue that was never registered, and registers it', async () => {
      const store = await setup();
      await file(store, sampleDeadLetter('1', { queue: 'late' }));
      expect((await store.queues()).map((q) => [q.queue, q.count])).toEqual([['late', 1]]);
    });

    it('evicts the oldest records beyond maxCount when filing, and counts them', async () => {
      const store = await setup();
      await store.registerQueue('index', { maxCount: 3 });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++)
        ids.push((await file(store, sampleDeadLetter(`j${i}`, { deadLetteredAt: T0 + i }))).id);
      expect(await listAll(store, 'index')).toEqual([2, 3, 4].map((i) => `${ids[i]}:j${i}`));
      expect(await store.queue('index')).toMatchObject({ count: 3, evicted: 2 });
      expect(await store.get('index', ids[0] as string)).toBeUndefined();
      expect(await store.count('index', { reason: 'max-attempts' })).toBe(3);
    });

    it('evicts records older than maxAgeMs (by store time) at the next filing', async () => {
      const store = await setup();
      await store.registerQueue('index', { maxAgeMs: 1_000 });
      await file(store, sampleDeadLetter('old', { deadLetteredAt: T0 - 2_000 }));
      await file(store, sampleDeadLetter('edge', { deadLetteredAt: T0 - 500 }));
      expect(await store.queue('index')).toMatchObject({ count: 1, evicted: 1 });
      clock.advance(600);
      expect(await store.count('index')).toBe(1); // reading never writes: nothing evicted yet
      await file(store, sampleDeadLetter('new', { deadLetteredAt: T0 + 600 }));
      expect((await listAll(store, 'index')).map((l) => l.split(':')[1])).toEqual(['new']);
      expect(await store.queue('index')).toMatchObject({ count: 1, evicted: 2 });
    });

    it('never evicts the record it files, however old; the next filing drops it, and each filing says what it evicted', async () => {
      const store = await setup();
      await store.registerQueue('index', { maxAgeMs: 30 * DAY });
      // 40 days old when filed (a migration, a late worker): kept by its own filing.
      const first = await file(store, sampleDeadLetter('a', { deadLetteredAt: T0 - 40 * DAY }));
      expect(first).toEqual({ id: first.id, created: true });
      expect(await store.get('index', first.id)).toMatchObject({ jobId: 'a' });
      const second = await file(
        store,
        sampleDeadLetter('b', { deadLetteredAt: T0 - 40 * DAY, reason: 'budget-exhausted' }),
      );
      expect(second.evicted).toEqual({ count: 1, reasons: { 'max-attempts': 1 }, limits: { maxAgeMs: 1 } });
      expect(await store.get('index', first.id)).toBeUndefined();
      expect(await store.get('index', second.id)).toMatchObject({ jobId: 'b' });
      expect(await store.queue('index')).toMatchObject({ count: 1, evicted: 1 });

      await store.registerQueue('index', { maxCount: 2 });
      const third = await file(store, sampleDeadLetter('c', { deadLetteredAt: T0 }));
      expect(third.evicted).toBeUndefined();
      // The oldest of all, filed at the limit: the next oldest goes, not the record being filed.
      const fourth = await file(
        store,
        sampleDeadLetter('d', { deadLetteredAt: T0 - 50 * DAY, reason: 'breaker-open' }),
      );
      expect(fourth.evicted).toEqual({
        count: 1,
        reasons: { 'budget-exhausted': 1 },
        limits: { maxCount: 1 },
      });
      expect((await listAll(store, 'index')).map((l) => l.split(':')[1])).toEqual(['d', 'c']);
      const fifth = await file(store, sampleDeadLetter('e', { deadLetteredAt: T0 + 1 }));
      expect(fifth.evicted).toEqual({ count: 1, reasons: { 'breaker-open': 1 }, limits: { maxCount: 1 } });
      expect((await listAll(store, 'index')).map((l) => l.split(':')[1])).toEqual(['c', 'e']);
      expect(await store.queue('index')).toMatchObject({ count: 2, evicted: 3 });
      // Filing the same job again evicts nothing and reports nothing.
      expect(await file(store, sampleDeadLetter('e', { deadLetteredAt: T0 + 1 }))).toEqual({
        id: fifth.id,
        created: false,
      });
    });

    it('files at the retention limit while replays, purges and deletes remove records: nothing fails, every record is accounted for', async () => {
      const store = await setup();
      const LIMIT = 8;
      await store.registerQueue('index', { maxCount: LIMIT });
      for (let i = 0; i < LIMIT; i++)
        await file(store, sampleDeadLetter(`seed-${i}`, { deadLetteredAt: T0 + i }));
      const removed = new Set<string>();
      let reported = 0;
      const failures: string[] = [];
      const guard = (lane: string, work: () => Promise<void>) =>
        work().catch((error: unknown) => {
          failures.push(`${lane}: ${error instanceof Error ? error.message : String(error)}`);
        });
      // Two filers at the limit: every filing evicts the oldest record, which the removers also go for.
      const filer = (lane: number) =>
        guard(`file ${lane}`, async () => {
          for (let i = 0; i < 40; i++) {
            const filing = await file(
              store,
              sampleDeadLetter(`f${lane}-${i}`, { deadLetteredAt: T0 + LIMIT + i }),
            );
            expect(filing.created).toBe(true);
            reported += filing.evicted?.count ?? 0;
          }
        });
      const removeOldest = (lane: string, take: (id: string) => Promise<boolean>, newestFirst = false) =>
        guard(lane, async () => {
          for (let round = 0; round < 30; round++) {
            const page = await store.list('index', { limit: 2, newestFirst });
            for (const record of page.records) if (await take(record.id)) removed.add(record.id);
          }
        });
      await Promise.all([
        filer(0),
        filer(1),
        // A replay: claim the oldest, then remove it once "re-added".
        removeOldest('replay', async (id) => {
          const claim = await store.claimReplay('index', id, `replay-${id}`);
          return claim !== undefined && (await store.completeReplay('index', id));
        }),
        removeOldest('purge', (id) => Promise.resolve(store.remove('index', id))),
        removeOldest('delete', (id) => Promise.resolve(store.remove('index', id)), true),
      ]);
      expect(failures).toEqual([]);
      const summary = await store.queue('index');
      const held = await store.count('index');
      expect(summary?.count).toBe(held);
      expect(held).toBeLessThanOrEqual(LIMIT);
      expect((await listAll(store, 'index', {}, 100)).length).toBe(held);
      // Seeded plus filed: each one is held, evicted (and reported by its filing) or removed, once.
      expect(held + (summary?.evicted ?? 0) + removed.size).toBe(LIMIT + 80);
      expect(reported).toBe(summary?.evicted);
    });

    it('refuses bad retention limits, naming them', async () => {
      const store = await setup();
      await expect((async () => store.registerQueue('index', { maxCount: 0 }))()).rejects.toSatisfy(
        (e: unknown) => isValidationError(e) && /maxCount/.test((e as Error).message),
      );
      await expect((async () => store.registerQueue('index', { maxAgeMs: -1 }))()).rejects.toSatisfy(
        isValidationError,
      );
    });

    it('claims a record for replay once, and hands an interrupted claim back', async () => {
      const store = await setup();
      const { id } = await file(store, sampleDeadLetter('9'));
      expect(await store.claimReplay('index', id, 'replay-a')).toEqual({ jobId: 'replay-a', claimedAt: T0 });
      clock.advance(1_000);
      expect(await store.claimReplay('index', id, 'replay-b')).toEqual({ jobId: 'replay-a', claimedAt: T0 });
      expect(await store.get('index', id)).toMatchObject({ replay: { jobId: 'replay-a', claimedAt: T0 } });
      expect(await store.completeReplay('index', id)).toBe(true);
      expect(await store.completeReplay('index', id)).toBe(false);
      expect(await store.claimReplay('index', id, 'replay-c')).toBeUndefined();
      expect(await store.count('index')).toBe(0);
    });

    it('lists a malformed record as malformed, counts it, removes it, and lists the good ones', async () => {
      const store = await setup();
      const good = await file(store, sampleDeadLetter('good', { deadLetteredAt: T0 + 1 }));
      const bad = await file(store, sampleDeadLetter('bad', { deadLetteredAt: T0 + 2 }));
      const last = await file(store, sampleDeadLetter('last', { deadLetteredAt: T0 + 3 }));
      await harness?.damage('index', bad.id);
      expect(await store.get('index', bad.id)).toMatchObject({
        id: bad.id,
        malformed: true,
        problem: expect.any(String),
      });
      expect(await listAll(store, 'index', {}, 1)).toEqual([
        `${good.id}:good`,
        `${bad.id}:malformed`,
        `${last.id}:last`,
      ]);
      const page = await store.list('index', { limit: 10, reason: 'max-attempts' });
      expect(page.records.map((r) => r.jobId)).toEqual(['good', 'last']);
      expect(page.malformed.map((m) => m.id)).toEqual([bad.id]);
      expect(await store.count('index')).toBe(3);
      expect(await store.remove('index', bad.id)).toBe(true);
      expect(await store.count('index')).toBe(2);
    });

    it('refuses a record that is not one, naming the field, and stores nothing', async () => {
      const store = await setup();
      const broken = { ...sampleDeadLetter('1'), deadLetteredAt: 'yesterday' } as unknown as DeadLetterRecord;
      await expect((async () => store.file(broken, STATE, DAY))()).rejects.toSatisfy(
        (e: unknown) => isValidationError(e) && /deadLetteredAt/.test((e as Error).message),
      );
      const noReason = { ...sampleDeadLetter('1'), reason: 'tired' } as unknown as DeadLetterRecord;
      await expect((async () => store.file(noReason, STATE, DAY))()).rejects.toSatisfy(isValidationError);
      expect(await store.count('index')).toBe(0);
      expect(await store.readAttempts(sampleDeadLetter('1'))).toBeUndefined();
    });

    describe('text search (searchDeadLetters over the store)', () => {
      /** 12 records; jobs 3, 8 and 12 failed with ECONNRESET, job 5 is named "export-csv". */
      async function seed(store: DeadLetterStore) {
        for (let i = 1; i <= 12; i++) {
          const reset = i === 3 || i === 8 || i === 12;
          await file(
            store,
            sampleDeadLetter(`job-${i}`, {
              deadLetteredAt: T0 + i,
              name: i === 5 ? 'export-csv' : 'reindex',
              reason: i % 2 === 0 ? 'permanent' : 'max-attempts',
              lastError: {
                name: reset ? 'FetchError' : 'TransientError',
                message: reset ? 'read ECONNRESET' : 'search timed out',
                classification: { retryable: true, reason: 'network' },
              },
            }),
          );
        }
      }
      const jobs = (r: { records: { jobId: string }[] }) => r.records.map((x) => x.jobId);

      it('scans at most scanLimit records a call, in order, and goes on from its cursor: "searched n of total"', async () => {
        const store = await setup();
        await seed(store);
        const search = { text: 'econnreset', scanLimit: 5 };
        const first = await searchDeadLetters(store, 'index', search);
        expect([jobs(first), first.scanned, first.total]).toEqual([['job-3'], 5, 12]);
        const second = await searchDeadLetters(store, 'index', { ...search, cursor: first.next! });
        expect([jobs(second), second.scanned]).toEqual([['job-8'], 10]);
        const third = await searchDeadLetters(store, 'index', { ...search, cursor: second.next! });
        expect([jobs(third), third.scanned, third.next]).toEqual([['job-12'], 12, undefined]);
      });

      it('stops at limit matches, and the next call starts right after the last one', async () => {
        const store = await setup();
        await seed(store);
        const first = await searchDeadLetters(store, 'index', { text: 'REINDEX', limit: 2 });
        expect([jobs(first), first.scanned]).toEqual([['job-1', 'job-2'], 2]);
        const rest = await searchDeadLetters(store, 'index', {
          text: 'REINDEX',
          limit: 20,
          cursor: first.next!,
        });
        expect(jobs(rest)).toEqual([
          'job-3',
          'job-4',
          'job-6',
          'job-7',
          'job-8',
          'job-9',
          'job-10',
          'job-11',
          'job-12',
        ]);
        expect(rest.next).toBeUndefined();
      });

      it('matches the record id, the job id, the name and the error class; narrows by an indexed filter first', async () => {
        const store = await setup();
        await seed(store);
        expect(jobs(await searchDeadLetters(store, 'index', { text: 'export' }))).toEqual(['job-5']);
        expect(jobs(await searchDeadLetters(store, 'index', { text: 'job-11' }))).toEqual(['job-11']);
        expect(jobs(await searchDeadLetters(store, 'index', { text: 'fetcherror' }))).toEqual([
          'job-3',
          'job-8',
          'job-12',
        ]);
        const permanent = await searchDeadLetters(store, 'index', {
          text: 'econnreset',
          reason: 'permanent',
        });
        expect([jobs(permanent), permanent.scanned, permanent.total]).toEqual([['job-8', 'job-12'], 6, 6]);
        const newest = await searchDeadLetters(store, 'index', {
          text: 'econnreset',
          newestFirst: true,
          limit: 1,
        });
        expect(jobs(newest)).toEqual(['job-12']);
        expect(await searchDeadLetters(store, 'none', { text: 'x' })).toEqual({
          records: [],
          scanned: 0,
          total: 0,
        });
      });

      it('refuses an empty text and a cursor from nowhere', async () => {
        const store = await setup();
        await expect(searchDeadLetters(store, 'index', { text: ' ' })).rejects.toThrow(/text: search for/);
        await expect(searchDeadLetters(store, 'index', { text: 'x', cursor: 'nope' })).rejects.toThrow(
          /not a search cursor/,
        );
      });
    });
  });
}
