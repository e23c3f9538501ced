import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../common/clock.js';
import type { FlowStore } from './store.js';

/** Stores that share one flow state (one per connection for Redis), all on the given fake clock. */
export interface FlowStoreHarness {
  stores: FlowStore[];
  close(): Promise<void>;
}

/** Builds a fresh, empty harness of `connections` stores on `clock`. */
export type OpenFlowStores = (clock: FakeClock, connections: number) => Promise<FlowStoreHarness>;

const T0 = 1_700_000_000_000;
const RAMP = { slowStartMs: 10_000, floorPerSecond: 2 };

/**
 * The flow store contract, written once and run against every implementation (memory, Redis, PostgreSQL).
 *
 * @example
 * flowStoreCases('MemoryFlowStore', async (clock, n) => {
 *   const store = new MemoryFlowStore({ clock });
 *   return { stores: Array(n).fill(store), close: async () => {} };
 * });
 */
export function flowStoreCases(name: string, open: OpenFlowStores): void {
  describe(`${name} (flow store contract)`, () => {
    let harness: FlowStoreHarness | undefined;
    let clock: FakeClock;

    async function setup(connections = 1): Promise<FlowStore[]> {
      clock = new FakeClock(T0);
      harness = await open(clock, connections);
      return harness.stores;
    }
    afterEach(async () => {
      await harness?.close();
      harness = undefined;
    });

    it('a dependency never seen is up, with no recovery, and flow control is on', async () => {
      const [store] = await setup();
      expect(await store?.read('search')).toEqual({ down: false, nowMs: T0, off: false });
    });

    it('markUp starts the ramp only for a dependency marked down, once, whoever sees it', async () => {
      const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
      expect(await a.markUp('search')).toEqual({ down: false, nowMs: T0, off: false });
      await a.markDown('search');
      await b.markDown('search');
      expect(await b.read('search')).toEqual({ down: true, nowMs: T0, off: false });
      clock.advance(1_000);
      expect(await b.markUp('search')).toEqual({
        down: false,
        recoveredAtMs: T0 + 1_000,
        nowMs: T0 + 1_000,
        off: false,
      });
      clock.advance(500);
      expect(await a.markUp('search')).toEqual({
        down: false,
        recoveredAtMs: T0 + 1_000,
        nowMs: T0 + 1_500,
        off: false,
      });
      expect(await a.read('mail')).toEqual({ down: false, nowMs: T0 + 1_500, off: false });
    });

    it('admits at the ramp floor right after recovery, fleet-wide, and reserves later slots within maxWaitMs', async () => {
      const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
      await a.markDown('search');
      await a.markUp('search');
      expect(await a.admit('search', RAMP, 0)).toEqual({ granted: true, waitMs: 0, tatMs: T0 + 500 });
      expect(await b.admit('search', RAMP, 0)).toEqual({ granted: false, waitMs: 500, tatMs: T0 + 500 });
      expect(await b.admit('search', RAMP, 1_000)).toEqual({ granted: true, waitMs: 500, tatMs: T0 + 1_000 });
      // Another dependency is not recovering: unlimited.
      expect(await b.admit('mail', RAMP, 0)).toEqual({ granted: true, waitMs: 0, tatMs: T0 });
    });

    it('the rate doubles along the ramp and is unlimited after it', async () => {
      const [store] = (await setup()) as [FlowStore];
      await store.markDown('search');
      await store.markUp('search');
      clock.advance(5_000); // 2 × 2^5 = 64 per second
      const first = await store.admit('search', RAMP, 0);
      expect(first.granted).toBe(true);
      expect(first.tatMs).toBeCloseTo(T0 + 5_000 + 1_000 / 64, 6);
      clock.advance(5_000);
      expect(await store.admit('search', RAMP, 0)).toEqual({ granted: true, waitMs: 0, tatMs: T0 + 10_000 });
      expect(await store.admit('search', RAMP, 0)).toEqual({ granted: true, waitMs: 0, tatMs: T0 + 10_000 });
    });

    it('maxRatePerSecond paces a dependency that never went down', async () => {
      const [store] = (await setup()) as [FlowStore];
      const capped = { ...RAMP, maxRatePerSecond: 4 };
      expect(await store.admit('crm', capped, 0)).toEqual({ granted: true, waitMs: 0, tatMs: T0 + 250 });
      expect(await store.admit('crm', capped, 0)).toEqual({ granted: false, waitMs: 250, tatMs: T0 + 250 });
    });

    it('releases parked jobs oldest first, paced by the ramp, and marks each released once', async () => {
      const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
      await a.markDown('search');
      for (const id of ['j1', 'j2', 'j3', 'j4', 'j5']) await a.park('search', 'index', id, 60_000);
      expect(await b.parked('search', 'index')).toBe(5);
      expect(await b.parked('search', 'other')).toBe(0);
      await b.markUp('search');
      // 2 per second: slots at +0 and +500 ms start within a 1 s horizon.
      expect(await b.release('search', 'index', RAMP, 10, 1_000)).toEqual(['j1', 'j2']);
      expect(await a.release('search', 'index', RAMP, 10, 1_000)).toEqual([]);
      clock.advance(1_000);
      expect(await a.release('search', 'index', RAMP, 1, 1_000)).toEqual(['j3']);
      expect(await a.parked('search', 'index')).toBe(2);
      expect(await a.claimReleased('search', 'index', 'j1')).toBe(true);
      expect(await b.claimReleased('search', 'index', 'j1')).toBe(false);
      expect(await b.claimReleased('search', 'index', 'j4')).toBe(false);
      expect(await b.claimReleased('search', 'other', 'j2')).toBe(false);
      expect(await b.claimReleased('search', 'index', 'j2')).toBe(true);
    });

    it('releases everything at once past the ramp, up to max, and nothing from an empty list', async () => {
      const [store] = (await setup()) as [FlowStore];
      expect(await store.release('search', 'index', RAMP, 10, 1_000)).toEqual([]);
      for (const id of ['a', 'b', 'c']) await store.park('search', 'index', id, 60_000);
      expect(await store.release('search', 'index', RAMP, 2, 1_000)).toEqual(['a', 'b']);
      expect(await store.release('search', 'index', RAMP, 2, 1_000)).toEqual(['c']);
      expect(await store.parked('search', 'index')).toBe(0);
    });

    it('lists the workers holding a queue paused, fleet-wide, per dependency, keeping when each began', async () => {
      const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
      expect(await a.pausedWorkers('search')).toEqual([]);
      await a.notePaused('search', 'index', 'w2', 4_000, 15_000);
      await b.notePaused('search', 'index', 'w1', 4_000, 15_000);
      await b.notePaused('search', 'crawl', 'w1', 1_000, 15_000);
      await b.notePaused('mail', 'index', 'w1', 1_000, 15_000);
      clock.advance(2_000);
      // A refresh keeps sinceMs and moves untilMs and the expiry.
      await a.notePaused('search', 'index', 'w2', 4_000, 15_000);
      expect(await b.pausedWorkers('search')).toEqual([
        { queue: 'crawl', worker: 'w1', sinceMs: T0, untilMs: T0 + 1_000, expiresAtMs: T0 + 15_000 },
        { queue: 'index', worker: 'w1', sinceMs: T0, untilMs: T0 + 4_000, expiresAtMs: T0 + 15_000 },
        { queue: 'index', worker: 'w2', sinceMs: T0, untilMs: T0 + 6_000, expiresAtMs: T0 + 17_000 },
      ]);
      await a.clearPaused('search', 'index', 'w1');
      await a.clearPaused('search', 'index', 'w1');
      await a.clearPaused('search', 'index', 'nobody');
      expect((await b.pausedWorkers('search')).map((e) => [e.queue, e.worker])).toEqual([
        ['crawl', 'w1'],
        ['index', 'w2'],
      ]);
      expect((await a.pausedWorkers('mail')).map((e) => [e.queue, e.worker])).toEqual([['index', 'w1']]);
    });

    it("a paused worker's entry ages out unless refreshed, and a later pause starts afresh", async () => {
      const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
      await a.notePaused('search', 'index', 'crashed', 30_000, 3_000);
      await a.notePaused('search', 'index', 'alive', 30_000, 3_000);
      clock.advance(2_000);
      await b.notePaused('search', 'index', 'alive', 30_000, 3_000);
      clock.advance(1_000); // the first note of each ends now
      expect(await b.pausedWorkers('search')).toEqual([
        { queue: 'index', worker: 'alive', sinceMs: T0, untilMs: T0 + 32_000, expiresAtMs: T0 + 5_000 },
      ]);
      clock.advance(2_000);
      expect(await a.pausedWorkers('search')).toEqual([]);
      // Paused again after its entry aged out: since is the new pause's start.
      await a.notePaused('search', 'index', 'alive', 1_000, 3_000);
      expect(await b.pausedWorkers('search')).toEqual([
        {
          queue: 'index',
          worker: 'alive',
          sinceMs: T0 + 5_000,
          untilMs: T0 + 6_000,
          expiresAtMs: T0 + 8_000,
        },
      ]);
    });

    it('paused-worker entries keep queue and worker names apart, whatever they hold', async () => {
      const [store] = (await setup()) as [FlowStore];
      await store.notePaused('eu:search', 'a:b', 'c', 1_000, 5_000);
      await store.notePaused('eu:search', 'a', 'b:c', 1_000, 5_000);
      await store.notePaused('eu:search', 'q "1"', 'w {x}', 1_000, 5_000);
      expect((await store.pausedWorkers('eu:search')).map((e) => [e.queue, e.worker])).toEqual([
        ['a', 'b:c'],
        ['a:b', 'c'],
        ['q "1"', 'w {x}'],
      ]);
      expect(await store.pausedWorkers('eu')).toEqual([]);
    });

    it('the kill switch is fleet-wide', async () => {
      const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
      expect(await b.switchedOff()).toBe(false);
      await a.setOff(true);
      expect((await b.read('search')).off).toBe(true);
      expect(await b.switchedOff()).toBe(true);
      await b.setOff(false);
      expect((await a.read('search')).off).toBe(false);
    });
  });
}
