import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../common/clock.js';
import { isValidationError } from '../../errors/validation-error.js';
import type { LimitExchange } from '../limits/store.js';
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
const LEASE_MS = 10_000;

/** A limits exchange of `holder` with nothing in it but what `parts` says. */
function exchange(holder: string, parts: Partial<LimitExchange> = {}): LimitExchange {
  return {
    holder,
    declared: {},
    leaseMs: LEASE_MS,
    give: [],
    renew: [],
    take: [],
    probes: 1,
    ramp: RAMP,
    ...parts,
  };
}

/** Leases to take: ids of cost 1, or `[id, cost]`. */
function takes(...leases: (string | [string, number])[]): LimitExchange['take'] {
  return leases.map((l) => (typeof l === 'string' ? { lease: l, cost: 1 } : { lease: l[0], cost: l[1] }));
}

/**
 * The flow store contract, written once and run against every implementation (memory, Redis, PostgreSQL), limits included.
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

    describe('limits', () => {
      const CAP5 = { declared: { maxInFlight: 5 } };

      it('holds the in-flight cap fleet-wide, in cost units, and frees a slot given back', async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        const first = await a.exchangeLimits(
          'api',
          exchange('a', { ...CAP5, take: takes(['a1', 2], ['a2', 2]) }),
        );
        expect(first).toEqual({
          granted: 2,
          waitMs: 0,
          state: {
            dependency: 'api',
            nowMs: T0,
            inFlight: 4,
            declared: { maxInFlight: 5 },
            effective: { maxInFlight: 5 },
            probing: false,
          },
        });
        const refused = await b.exchangeLimits('api', exchange('b', { ...CAP5, take: takes(['b1', 2]) }));
        expect([refused.granted, refused.waitMs, refused.refusedBy, refused.state.inFlight]).toEqual([
          0,
          0,
          'in-flight',
          4,
        ]);
        const one = await b.exchangeLimits('api', exchange('b', { ...CAP5, take: takes('b2', 'b3') }));
        expect([one.granted, one.refusedBy, one.state.inFlight]).toEqual([1, 'in-flight', 5]);
        const given = await a.exchangeLimits(
          'api',
          exchange('a', { ...CAP5, give: [{ lease: 'a1', ok: true }], take: takes(['a3', 2]) }),
        );
        expect([given.granted, given.refusedBy, given.state.inFlight]).toEqual([1, undefined, 5]);
        expect((await b.limitState('api')).inFlight).toBe(5);
      });

      it('grants a call heavier than the whole cap only when nothing is in flight', async () => {
        const [store] = (await setup()) as [FlowStore];
        const cap = { declared: { maxInFlight: 3 } };
        expect(
          (await store.exchangeLimits('api', exchange('a', { ...cap, take: takes(['big', 7]) }))).granted,
        ).toBe(1);
        const next = await store.exchangeLimits('api', exchange('a', { ...cap, take: takes('small') }));
        expect([next.granted, next.refusedBy, next.state.inFlight]).toEqual([0, 'in-flight', 7]);
        await store.exchangeLimits('api', exchange('a', { ...cap, give: [{ lease: 'big', ok: true }] }));
        const after = await store.exchangeLimits(
          'api',
          exchange('a', { ...cap, take: takes('small', ['big2', 7]) }),
        );
        expect([after.granted, after.refusedBy, after.state.inFlight]).toEqual([1, 'in-flight', 1]);
      });

      it("a crashed holder's leases expire after leaseMs and their slots come back", async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        const cap = { declared: { maxInFlight: 2 }, leaseMs: 3_000 };
        expect(
          (await a.exchangeLimits('api', exchange('a', { ...cap, take: takes('a1', 'a2') }))).granted,
        ).toBe(2);
        clock.advance(2_999);
        const still = await b.exchangeLimits('api', exchange('b', { ...cap, take: takes('b1') }));
        expect([still.granted, still.refusedBy, still.state.inFlight]).toEqual([0, 'in-flight', 2]);
        clock.advance(1); // a's leases end now
        expect((await b.limitState('api')).inFlight).toBe(0);
        const back = await b.exchangeLimits('api', exchange('b', { ...cap, take: takes('b1', 'b2', 'b3') }));
        expect([back.granted, back.refusedBy, back.state.inFlight]).toEqual([2, 'in-flight', 2]);
      });

      it('renewing keeps leases held; unknown leases are ignored', async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        const cap = { declared: { maxInFlight: 2 }, leaseMs: 3_000 };
        await a.exchangeLimits('api', exchange('a', { ...cap, take: takes('a1', 'a2') }));
        clock.advance(2_000);
        const renewed = await a.exchangeLimits(
          'api',
          exchange('a', { ...cap, renew: ['a1', 'a2', 'ghost'] }),
        );
        expect([renewed.granted, renewed.state.inFlight]).toEqual([0, 2]);
        clock.advance(2_999); // T0 + 4 999: the first expiry is past, the renewed one is not
        const held = await b.exchangeLimits('api', exchange('b', { ...cap, take: takes('b1') }));
        expect([held.granted, held.refusedBy, held.state.inFlight]).toEqual([0, 'in-flight', 2]);
        clock.advance(1);
        expect((await b.exchangeLimits('api', exchange('b', { ...cap, take: takes('b1') }))).granted).toBe(1);
      });

      it('the lowest declaration of each field wins while it lives, leaseMs past its last exchange', async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        await a.exchangeLimits(
          'api',
          exchange('a', { declared: { maxInFlight: 10, maxRatePerSecond: 100 } }),
        );
        const both = await b.exchangeLimits('api', exchange('b', { declared: { maxInFlight: 3 } }));
        expect([both.state.declared, both.state.effective]).toEqual([
          { maxInFlight: 3, maxRatePerSecond: 100 },
          { maxInFlight: 3, maxRatePerSecond: 100 },
        ]);
        clock.advance(LEASE_MS - 1);
        expect((await a.limitState('api')).declared).toEqual({ maxInFlight: 3, maxRatePerSecond: 100 });
        await a.exchangeLimits(
          'api',
          exchange('a', { declared: { maxInFlight: 10, maxRatePerSecond: 100 } }),
        );
        clock.advance(1); // b's declaration ends now; a's was renewed by its exchange
        expect((await b.limitState('api')).effective).toEqual({ maxInFlight: 10, maxRatePerSecond: 100 });
      });

      it("an operator's override wins over every declaration, field by field, until it expires", async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        const code = { declared: { maxInFlight: 10, maxRatePerSecond: 1_000 } };
        await a.exchangeLimits('api', exchange('a', code));
        const set = await b.overrideLimits('api', {
          maxInFlight: 1,
          reason: 'vendor incident',
          by: 'ops@host',
          expiresInMs: 5_000,
        });
        const override = {
          maxInFlight: 1,
          reason: 'vendor incident',
          by: 'ops@host',
          setAtMs: T0,
          expiresAtMs: T0 + 5_000,
        };
        expect(set).toEqual({
          dependency: 'api',
          nowMs: T0,
          inFlight: 0,
          declared: { maxInFlight: 10, maxRatePerSecond: 1_000 },
          effective: { maxInFlight: 1, maxRatePerSecond: 1_000 },
          override,
          probing: false,
        });
        const capped = await a.exchangeLimits('api', exchange('a', { ...code, take: takes('a1', 'a2') }));
        expect([capped.granted, capped.refusedBy, capped.state.override]).toEqual([1, 'in-flight', override]);
        clock.advance(5_000);
        const lapsed = await a.exchangeLimits('api', exchange('a', { ...code, take: takes('a2') }));
        expect([lapsed.granted, lapsed.state.override, lapsed.state.effective]).toEqual([
          1,
          undefined,
          { maxInFlight: 10, maxRatePerSecond: 1_000 },
        ]);
        // Higher than the code's limit: it still wins.
        await b.overrideLimits('api', { maxInFlight: 20, reason: 'more', by: 'ops' });
        expect((await a.limitState('api')).effective).toEqual({ maxInFlight: 20, maxRatePerSecond: 1_000 });
      });

      it('a pause refuses every take until resumed or expired, and says how long when it knows', async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        await b.overrideLimits('api', { paused: true, reason: 'maintenance', by: 'ops' });
        const paused = await a.exchangeLimits('api', exchange('a', { take: takes('a1', 'a2') }));
        expect([paused.granted, paused.refusedBy, paused.waitMs]).toEqual([0, 'paused', 0]);
        expect(paused.state.override).toEqual({
          paused: true,
          reason: 'maintenance',
          by: 'ops',
          setAtMs: T0,
        });
        await b.overrideLimits('api', {
          paused: true,
          reason: 'maintenance',
          by: 'ops',
          expiresInMs: 60_000,
        });
        clock.advance(1_000);
        const timed = await a.exchangeLimits('api', exchange('a', { take: takes('a1') }));
        expect([timed.granted, timed.refusedBy, timed.waitMs]).toEqual([0, 'paused', 59_000]);
        const resumed = await b.overrideLimits('api', undefined);
        expect(resumed.override).toBeUndefined();
        expect((await a.exchangeLimits('api', exchange('a', { take: takes('a1', 'a2') }))).granted).toBe(2);
        await b.overrideLimits('api', { paused: true, reason: 'again', by: 'ops', expiresInMs: 2_000 });
        clock.advance(2_000);
        expect((await a.exchangeLimits('api', exchange('a', { take: takes('a3') }))).granted).toBe(1);
      });

      it('a hold refuses every take until its time, then probes, and a success starts the ramp at its floor', async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        const code = { declared: { maxInFlight: 10 }, probes: 2 };
        expect(
          (await a.exchangeLimits('api', exchange('a', { ...code, take: takes('early') }))).granted,
        ).toBe(1);
        const hold = { untilMs: T0 + 5_000, reason: 'retry-after', setAtMs: T0 };
        expect(await b.holdLimits('api', 5_000, 'retry-after')).toMatchObject({ hold, probing: false });
        clock.advance(1_000);
        // A shorter hold does not cut the longer one.
        expect((await b.holdLimits('api', 2_000, 'retry-after')).hold).toEqual(hold);
        const held = await a.exchangeLimits('api', exchange('a', { ...code, take: takes('p1') }));
        expect([held.granted, held.refusedBy, held.waitMs, held.state.hold]).toEqual([
          0,
          'hold',
          4_000,
          hold,
        ]);
        // A success while the hold lasts does not end it, nor the probing after it.
        await a.exchangeLimits('api', exchange('a', { ...code, give: [{ lease: 'early', ok: true }] }));
        clock.advance(4_000);
        const probing = await b.exchangeLimits(
          'api',
          exchange('b', { ...code, take: takes('p1', 'p2', 'p3') }),
        );
        expect(probing).toMatchObject({ granted: 2, refusedBy: 'in-flight', waitMs: 0 });
        expect([probing.state.inFlight, probing.state.probing, probing.state.hold]).toEqual([
          2,
          true,
          undefined,
        ]);
        const failed = await b.exchangeLimits(
          'api',
          exchange('b', { ...code, give: [{ lease: 'p1', ok: false }], take: takes('p3', 'p4') }),
        );
        expect([failed.granted, failed.refusedBy, failed.state.probing]).toEqual([1, 'in-flight', true]);
        const ok = await a.exchangeLimits(
          'api',
          exchange('a', { ...code, give: [{ lease: 'p2', ok: true }], take: takes('r1', 'r2') }),
        );
        // The ramp starts at its floor, 2 per second: one now, the next in 500 ms.
        expect(ok).toMatchObject({ granted: 1, refusedBy: 'rate', waitMs: 500 });
        expect(ok.state).toMatchObject({ probing: false, recoveredAtMs: T0 + 5_000, inFlight: 2 });
        clock.advance(500);
        expect((await b.exchangeLimits('api', exchange('b', { ...code, take: takes('r2') }))).granted).toBe(
          1,
        );
        clock.advance(RAMP.slowStartMs);
        const ramped = await b.exchangeLimits(
          'api',
          exchange('b', { ...code, take: takes('s1', 's2', 's3') }),
        );
        expect([ramped.granted, ramped.refusedBy]).toEqual([3, undefined]);
      });

      it('a reset lifts the override, the hold and the probing at once', async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        await b.holdLimits('api', 60_000, 'retry-after');
        await b.overrideLimits('api', { maxInFlight: 1, reason: 'x', by: 'ops' });
        const reset = await b.overrideLimits('api', undefined, { clearHold: true });
        expect(reset).toEqual({
          dependency: 'api',
          nowMs: T0,
          inFlight: 0,
          declared: {},
          effective: {},
          probing: false,
        });
        const taken = await a.exchangeLimits('api', exchange('a', { take: takes('a1', 'a2', 'a3') }));
        expect([taken.granted, taken.refusedBy]).toEqual([3, undefined]);
      });

      it('paces cost units at maxRatePerSecond fleet-wide', async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        const rate = { declared: { maxRatePerSecond: 4 } };
        expect((await a.exchangeLimits('api', exchange('a', { ...rate, take: takes('a1') }))).granted).toBe(
          1,
        );
        const early = await b.exchangeLimits('api', exchange('b', { ...rate, take: takes('b1') }));
        expect([early.granted, early.refusedBy, early.waitMs]).toEqual([0, 'rate', 250]);
        clock.advance(250);
        // A call of cost 2 takes two slots: the next is 500 ms later.
        expect(
          (await b.exchangeLimits('api', exchange('b', { ...rate, take: takes(['b1', 2]) }))).granted,
        ).toBe(1);
        clock.advance(250);
        const later = await a.exchangeLimits('api', exchange('a', { ...rate, take: takes('a2') }));
        expect([later.granted, later.refusedBy, later.waitMs]).toEqual([0, 'rate', 250]);
        clock.advance(250);
        expect((await a.exchangeLimits('api', exchange('a', { ...rate, take: takes('a2') }))).granted).toBe(
          1,
        );
      });

      it('grants a prefix of the takes: the first refusal refuses the rest', async () => {
        const [store] = (await setup()) as [FlowStore];
        const cap = { declared: { maxInFlight: 2 } };
        const result = await store.exchangeLimits(
          'api',
          exchange('a', { ...cap, take: takes('a', ['b', 2], 'c') }),
        );
        expect([result.granted, result.refusedBy, result.state.inFlight]).toEqual([1, 'in-flight', 1]);
        const next = await store.exchangeLimits('api', exchange('a', { ...cap, take: takes('c', 'd') }));
        expect([next.granted, next.refusedBy, next.state.inFlight]).toEqual([1, 'in-flight', 2]);
      });

      it('limitState writes nothing: no pacer slot, no probing ended, no dependency created', async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        const empty = {
          dependency: 'api',
          nowMs: T0,
          inFlight: 0,
          declared: {},
          effective: {},
          probing: false,
        };
        expect(await a.limitState('api')).toEqual(empty);
        expect(await a.limitedDependencies()).toEqual([]);
        const rate = { declared: { maxRatePerSecond: 2 }, leaseMs: 1_000 };
        await a.exchangeLimits('api', exchange('a', { ...rate, take: takes('a1') }));
        await b.limitState('api');
        clock.advance(200);
        await b.limitState('api');
        const refused = await b.exchangeLimits('api', exchange('b', { ...rate, take: takes('b1') }));
        expect([refused.refusedBy, refused.waitMs]).toEqual(['rate', 300]);
        clock.advance(1_000);
        expect(await b.limitState('api')).toEqual({ ...empty, nowMs: T0 + 1_200 });
      });

      it('lists the dependencies with a live declaration, override or hold, sorted', async () => {
        const [a, b] = (await setup(2)) as [FlowStore, FlowStore];
        await a.exchangeLimits('eu:mail', exchange('a'));
        await b.overrideLimits('crm', { maxInFlight: 2, reason: 'x', by: 'ops', expiresInMs: 20_000 });
        await b.holdLimits('api', 30_000, 'retry-after');
        await b.overrideLimits('gone', { maxInFlight: 2, reason: 'x', by: 'ops' });
        await b.overrideLimits('gone', undefined);
        expect(await a.limitedDependencies()).toEqual(['api', 'crm', 'eu:mail']);
        clock.advance(LEASE_MS);
        expect(await b.limitedDependencies()).toEqual(['api', 'crm']);
        clock.advance(20_000 - LEASE_MS);
        expect(await b.limitedDependencies()).toEqual(['api']);
        clock.advance(10_000);
        expect(await a.limitedDependencies()).toEqual([]);
      });

      it('refuses a request, a hold or an override no store could keep, naming the field', async () => {
        const [store] = (await setup()) as [FlowStore];
        await expect(
          (async () => store.exchangeLimits('api', exchange('a', { leaseMs: 0 })))(),
        ).rejects.toSatisfy(isValidationError);
        await expect(
          (async () => store.exchangeLimits('api', exchange('a', { take: takes(['x', 0.5]) })))(),
        ).rejects.toThrow(/take\.0\.cost/);
        await expect((async () => store.holdLimits('api', -1, 'retry-after'))()).rejects.toThrow(/forMs/);
        await expect(
          (async () => store.overrideLimits('api', { maxInFlight: 0, reason: 'x', by: 'ops' }))(),
        ).rejects.toThrow(/maxInFlight/);
        await expect((async () => store.overrideLimits('api', { reason: ' ', by: 'ops' }))()).rejects.toThrow(
          /reason/,
        );
        expect(await store.limitedDependencies()).toEqual([]);
      });
    });
  });
}
