/**
 * The audit log contract, written once and run against every implementation (memory, Redis, PostgreSQL)
 * with no branch for any of them. Every case runs on a FakeClock the log takes as its time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import type { AuditLog } from './types.js';

/** One fresh, empty log on the given clock, bounded to `maxEntries`. */
export interface AuditLogHarness {
  log: AuditLog;
  close(): Promise<void>;
}

export type OpenAuditLog = (clock: FakeClock, maxEntries: number) => Promise<AuditLogHarness>;

const T0 = 1_700_000_000_000;

/** Registers the audit log conformance cases under `describe(name)`. */
export function describeAuditLog(name: string, open: OpenAuditLog): void {
  describe(`${name} (audit log contract)`, () => {
    let harness: AuditLogHarness | undefined;
    let clock: FakeClock;
    afterEach(async () => {
      await harness?.close();
      harness = undefined;
    });
    async function setup(maxEntries = 100): Promise<AuditLog> {
      clock = new FakeClock(T0);
      harness = await open(clock, maxEntries);
      return harness.log;
    }

    it('stores who, when, what and why, with an id and the store time; anonymous when nobody is named', async () => {
      const log = await setup();
      const first = await log.append({
        by: 'alice',
        action: 'breaker.force-open',
        target: 'search',
        reason: 'search cluster reindexing',
        detail: { from: 'closed', big: 9_007_199_254_740_991, nested: { list: [1, 'é "q"'] } },
      });
      expect(first).toEqual({
        id: '1',
        atMs: T0,
        by: 'alice',
        action: 'breaker.force-open',
        target: 'search',
        reason: 'search cluster reindexing',
        detail: { from: 'closed', big: 9_007_199_254_740_991, nested: { list: [1, 'é "q"'] } },
      });
      clock.advance(5);
      const second = await log.append({ action: 'replay.start', target: 'index' });
      expect(second).toEqual({
        id: '2',
        atMs: T0 + 5,
        by: 'anonymous',
        action: 'replay.start',
        target: 'index',
      });
      expect((await log.list({ limit: 10 })).entries).toEqual([second, first]);
    });

    it('pages newest first with a cursor, to the oldest entry', async () => {
      const log = await setup();
      for (let i = 1; i <= 5; i++)
        await log.append({ by: `u${i}`, action: 'breaker.reset', target: 'search' });
      const first = await log.list({ limit: 2 });
      expect(first.entries.map((e) => e.by)).toEqual(['u5', 'u4']);
      const second = await log.list({ limit: 2, cursor: first.next! });
      expect(second.entries.map((e) => e.by)).toEqual(['u3', 'u2']);
      // An entry appended meanwhile does not shift the pages after it.
      await log.append({ by: 'late', action: 'breaker.reset', target: 'search' });
      const last = await log.list({ limit: 2, cursor: second.next! });
      expect(last.entries.map((e) => e.by)).toEqual(['u1']);
      expect(last.next).toBeUndefined();
      expect((await log.list({ limit: 1 })).entries.map((e) => e.by)).toEqual(['late']);
    });

    it('keeps only the newest maxEntries; ids are never reused', async () => {
      const log = await setup(3);
      for (let i = 1; i <= 5; i++)
        await log.append({ by: `u${i}`, action: 'breaker.reset', target: 'search' });
      const page = await log.list({ limit: 10 });
      expect(page.entries.map((e) => [e.id, e.by])).toEqual([
        ['5', 'u5'],
        ['4', 'u4'],
        ['3', 'u3'],
      ]);
      expect(page.next).toBeUndefined();
      const two = await log.list({ limit: 2 });
      expect((await log.list({ limit: 2, cursor: two.next! })).entries.map((e) => e.id)).toEqual(['3']);
    });

    it('refuses an entry without an action or a target, naming the field; an empty log lists nothing', async () => {
      const log = await setup();
      await expect(log.append({ action: 'force open', target: 'search' })).rejects.toThrow(/action/);
      await expect(log.append({ action: 'breaker.reset', target: ' ' })).rejects.toThrow(/target/);
      await expect(log.list({ limit: 0 })).rejects.toThrow(/limit/);
      expect(await log.list({ limit: 10 })).toEqual({ entries: [] });
    });
  });
}
