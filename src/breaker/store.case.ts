import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import { resolveBreakerOptions } from './options.js';
import type { BreakerStore } from './types.js';

/** Stores that share one breaker state (one per connection for Redis), all on the given fake clock. */
export interface BreakerStoreHarness {
  stores: BreakerStore[];
  close(): Promise<void>;
}

/** Builds a fresh, empty harness of `connections` stores on `clock`. */
export type OpenBreakerStores = (clock: FakeClock, connections: number) => Promise<BreakerStoreHarness>;

const T0 = 1_700_000_000_000; // a realistic epoch, aligned to the 1 s buckets below
const settings = {
  failureRateThreshold: 0.5,
  windowMs: 10_000,
  minimumVolume: 10,
  consecutiveFailures: 5,
  coolDownMs: 5_000,
  halfOpenProbes: 2,
  successesToClose: 2,
};
const options = resolveBreakerOptions(settings);
const DEP = 'search';

/**
 * The breaker store contract, written once and run against every implementation (memory and Redis), as
 * hono runs one router suite against every router.
 *
 * @example
 * breakerStoreCases('MemoryBreakerStore', async (clock, n) => {
 *   const store = new MemoryBreakerStore({ clock });
 *   return { stores: Array(n).fill(store), close: async () => {} };
 * });
 */
export function breakerStoreCases(name: string, open: OpenBreakerStores): void {
  describe(`${name} (breaker store contract)`, () => {
    let harness: BreakerStoreHarness | undefined;
    let clock: FakeClock;

    async function setup(connections = 1): Promise<BreakerStore[]> {
      clock = new FakeClock(T0);
      harness = await open(clock, connections);
      return harness.stores;
    }
    afterEach(async () => {
      await harness?.close();
      harness = undefined;
    });

    async function feed(store: BreakerStore, outcomes: string) {
      let last: Awaited<ReturnType<BreakerStore['record']>> | undefined;
      for (const c of outcomes) last = await store.record(DEP, c === 'f' ? 'failure' : 'success', options);
      return last;
    }
    async function tripOpen(store: BreakerStore) {
      const result = await feed(store, 'fffff');
      expect(result?.snapshot.state).toBe('open');
    }

    it('starts closed and admits calls', async () => {
      const [store] = await setup();
      const admission = await store!.acquire(DEP, options);
      expect(admission).toMatchObject({ allowed: true, probe: false, transitions: [] });
      expect(admission.snapshot).toMatchObject({
        dependency: DEP,
        state: 'closed',
        volume: 0,
        degraded: false,
      });
    });

    it('opens after N consecutive failures; a success resets the streak', async () => {
      const [store] = await setup();
      expect((await feed(store!, 'ffffsffff'))?.snapshot).toMatchObject({
        state: 'closed',
        consecutiveFailures: 4,
      });
      const opened = await feed(store!, 'f');
      expect(opened?.transitions).toEqual([
        { from: 'closed', to: 'open', reason: 'consecutive-failures', atMs: T0 },
      ]);
      expect(opened?.snapshot).toMatchObject({ state: 'open', openedAtMs: T0, halfOpenAtMs: T0 + 5_000 });
      const refused = await store!.acquire(DEP, options);
      expect(refused).toMatchObject({ allowed: false, probe: false });
      expect(refused.snapshot.halfOpenAtMs).toBe(T0 + 5_000);
    });

    it('opens on the failure rate only once the window holds the minimum volume', async () => {
      const [store] = await setup();
      // 9 calls, 8 failures (89 %), never 5 in a row: below the minimum volume of 10, so still closed.
      expect((await feed(store!, 'ffffsffff'))?.snapshot).toMatchObject({ state: 'closed', volume: 9 });
      // A success brings the volume to 10; the next failure is judged on the rate: 9 / 11 >= 50 %.
      await feed(store!, 's');
      const opened = await feed(store!, 'f');
      expect(opened?.transitions.map((t) => t.reason)).toEqual(['failure-rate']);
      expect(opened?.snapshot).toMatchObject({ state: 'open', failures: 9, volume: 11 });
    });

    it('stays closed below the failure-rate threshold at any volume', async () => {
      const [store] = await setup();
      const result = await feed(store!, 'fsfss'.repeat(6)); // 40 % failures over 30 calls
      expect(result?.snapshot).toMatchObject({ state: 'closed', failures: 12, volume: 30 });
    });

    it('half-opens after the cool-down, not before', async () => {
      const [store] = await setup();
      await tripOpen(store!);
      clock.advance(4_999);
      expect(await store!.acquire(DEP, options)).toMatchObject({ allowed: false, transitions: [] });
      clock.advance(1);
      const probe = await store!.acquire(DEP, options);
      expect(probe).toMatchObject({ allowed: true, probe: true });
      expect(probe.transitions).toEqual([
        { from: 'open', to: 'half-open', reason: 'cool-down-elapsed', atMs: T0 + 5_000 },
      ]);
      expect(probe.snapshot).toMatchObject({ state: 'half-open', probesAdmitted: 1 });
    });

    it('read changes nothing: it shows half-open but leaves the transition to the next operation', async () => {
      const [store] = await setup();
      await tripOpen(store!);
      clock.advance(5_000);
      expect(await store!.read(DEP, options)).toMatchObject({ state: 'half-open', probesAdmitted: 0 });
      const probe = await store!.acquire(DEP, options);
      expect(probe.transitions.map((t) => t.to)).toEqual(['half-open']);
    });

    it('admits exactly K probes across 4 concurrent connections', async () => {
      const stores = await setup(4);
      await tripOpen(stores[0]!);
      clock.advance(5_000);
      const admissions = await Promise.all(
        stores.flatMap((store) => Array.from({ length: 5 }, () => store.acquire(DEP, options))),
      );
      expect(admissions.filter((a) => a.allowed)).toHaveLength(options.halfOpenProbes);
      expect(admissions.every((a) => a.allowed === a.probe)).toBe(true);
      // The transition happened once, fleet-wide, and was reported to exactly one caller.
      expect(admissions.flatMap((a) => a.transitions)).toHaveLength(1);
      expect(admissions.filter((a) => !a.allowed).every((a) => a.snapshot.state === 'half-open')).toBe(true);
    });

    it('closes after enough probe successes and clears the window', async () => {
      const [store] = await setup();
      await tripOpen(store!);
      clock.advance(5_000);
      const first = await store!.acquire(DEP, options);
      await store!.acquire(DEP, options);
      expect((await store!.acquire(DEP, options)).allowed).toBe(false);
      expect((await store!.record(DEP, 'success', options, first.ticket)).snapshot).toMatchObject({
        state: 'half-open',
        probeSuccesses: 1,
        probesInFlight: 1,
      });
      // One success frees a slot: another probe may go.
      const third = await store!.acquire(DEP, options);
      expect(third.probe).toBe(true);
      const closed = await store!.record(DEP, 'success', options, third.ticket);
      expect(closed.transitions).toEqual([
        { from: 'half-open', to: 'closed', reason: 'probes-succeeded', atMs: T0 + 5_000 },
      ]);
      expect(closed.snapshot).toMatchObject({
        state: 'closed',
        failures: 0,
        volume: 0,
        consecutiveFailures: 0,
      });
      expect(closed.snapshot.halfOpenAtMs).toBeUndefined();
      expect((await store!.acquire(DEP, options)).allowed).toBe(true);
    });

    it('reopens on a probe failure with a fresh cool-down', async () => {
      const [store] = await setup();
      await tripOpen(store!);
      clock.advance(6_000);
      const probe = await store!.acquire(DEP, options);
      const reopened = await store!.record(DEP, 'failure', options, probe.ticket);
      expect(reopened.transitions.map((t) => `${t.from}>${t.to}:${t.reason}`)).toEqual([
        'half-open>open:probe-failed',
      ]);
      expect(reopened.snapshot).toMatchObject({
        state: 'open',
        openedAtMs: T0 + 6_000,
        halfOpenAtMs: T0 + 11_000,
      });
    });

    it('a probe that never reports frees its slot one cool-down after its admission', async () => {
      const [store] = await setup();
      await tripOpen(store!);
      clock.advance(5_000);
      const lost = await store!.acquire(DEP, options);
      clock.advance(1_000);
      await store!.acquire(DEP, options);
      clock.advance(3_999);
      expect((await store!.acquire(DEP, options)).allowed).toBe(false);
      clock.advance(1);
      // The first probe's slot is free; the second one's is still taken.
      const next = await store!.acquire(DEP, options);
      expect(next).toMatchObject({ allowed: true, probe: true });
      expect(next.snapshot.probesInFlight).toBe(2);
      expect((await store!.acquire(DEP, options)).allowed).toBe(false);
      // Presumed lost, the first probe's late success is counted in the window, not as a probe's.
      const late = await store!.record(DEP, 'success', options, lost.ticket);
      expect(late.snapshot).toMatchObject({ state: 'half-open', probeSuccesses: 0, probesInFlight: 2 });
    });

    it('only admitted probes count: a call admitted while closed that ends during half-open does not', async () => {
      const [store] = await setup();
      const one = resolveBreakerOptions({ ...settings, halfOpenProbes: 1, successesToClose: 2 });
      const before = await store!.acquire(DEP, one); // admitted while closed, still in flight
      expect(before).toMatchObject({ allowed: true, probe: false });
      expect(before.ticket).toBeUndefined();
      for (let i = 0; i < 5; i++) await store!.record(DEP, 'failure', one);
      clock.advance(5_000);
      const probe = await store!.acquire(DEP, one);
      expect(probe).toMatchObject({ allowed: true, probe: true });
      // The old call succeeds now: it is no probe, so it neither frees the slot nor counts towards closing.
      const late = await store!.record(DEP, 'success', one, before.ticket);
      expect(late.transitions).toEqual([]);
      expect(late.snapshot).toMatchObject({ state: 'half-open', probeSuccesses: 0, probesInFlight: 1 });
      expect((await store!.acquire(DEP, one)).allowed).toBe(false);
      // A failure without a ticket does not reopen it either.
      expect((await store!.record(DEP, 'failure', one)).snapshot.state).toBe('half-open');
      const first = await store!.record(DEP, 'success', one, probe.ticket);
      expect(first.snapshot).toMatchObject({ state: 'half-open', probeSuccesses: 1, probesInFlight: 0 });
      // Each ticket counts once: reporting the same probe again does not close the breaker.
      expect((await store!.record(DEP, 'success', one, probe.ticket)).snapshot.state).toBe('half-open');
      const second = await store!.acquire(DEP, one);
      expect(second.probe).toBe(true);
      const closed = await store!.record(DEP, 'success', one, second.ticket);
      expect(closed.transitions.map((t) => t.reason)).toEqual(['probes-succeeded']);
    });

    it('a probe of an earlier half-open period does not count in the next one', async () => {
      const [store] = await setup();
      await tripOpen(store!);
      clock.advance(5_000);
      const old = await store!.acquire(DEP, options);
      const failed = await store!.acquire(DEP, options);
      await store!.record(DEP, 'failure', options, failed.ticket); // reopens
      clock.advance(5_000);
      const fresh = await store!.acquire(DEP, options);
      expect(fresh.ticket).not.toBe(old.ticket);
      const stale = await store!.record(DEP, 'success', options, old.ticket);
      expect(stale.snapshot).toMatchObject({ state: 'half-open', probeSuccesses: 0, probesInFlight: 1 });
      const nonsense = await store!.record(DEP, 'failure', options, 'not-a-ticket');
      expect(nonsense.snapshot.state).toBe('half-open');
      expect((await store!.record(DEP, 'success', options, fresh.ticket)).snapshot.probeSuccesses).toBe(1);
    });

    it('outcomes of calls that finish while open neither extend the cool-down nor change state', async () => {
      const [store] = await setup();
      await tripOpen(store!);
      clock.advance(1_000);
      const late = await store!.record(DEP, 'failure', options);
      expect(late.transitions).toEqual([]);
      expect(late.snapshot).toMatchObject({ state: 'open', halfOpenAtMs: T0 + 5_000, failures: 6 });
    });

    it('the sliding window forgets old failures', async () => {
      const [store] = await setup();
      await feed(store!, 'ffsffsffs'); // 6 failures in 9 calls, at T0
      clock.advance(9_999);
      expect(await store!.read(DEP, options)).toMatchObject({ failures: 6, volume: 9 });
      clock.advance(1);
      expect(await store!.read(DEP, options)).toMatchObject({ failures: 0, volume: 0 });
      // With the old calls still counted this failure would open it (7 of 10); forgotten, it does not.
      const result = await feed(store!, 'f');
      expect(result?.snapshot).toMatchObject({ state: 'closed', failures: 1, volume: 1 });
    });

    it('forgets a failure streak once the window holds no call', async () => {
      const [store] = await setup();
      await feed(store!, 'ffff');
      clock.advance(10_000);
      expect((await feed(store!, 'f'))?.snapshot).toMatchObject({ state: 'closed', consecutiveFailures: 1 });
    });

    it('a batch of successes counts in the window and ends a streak before its outcome, never as probes', async () => {
      const [store] = await setup();
      const recordBatch = store!.recordBatch!.bind(store);
      await feed(store!, 'ffff');
      // Without the batch first, this would be the fifth failure in a row.
      const after = await recordBatch(DEP, { successes: 6, outcome: 'failure' }, options);
      expect(after).toMatchObject({ transitions: [] });
      expect(after.snapshot).toMatchObject({
        state: 'closed',
        successes: 6,
        failures: 5,
        consecutiveFailures: 1,
      });
      const only = await recordBatch(DEP, { successes: 3 }, options);
      expect(only.snapshot).toMatchObject({
        state: 'closed',
        successes: 9,
        volume: 14,
        consecutiveFailures: 0,
      });
      await tripOpen(store!);
      clock.advance(5_000);
      const admission = await store!.acquire(DEP, options);
      expect(admission.probe).toBe(true);
      // Late successes of calls admitted while closed are not probe successes: still half-open.
      const late = await recordBatch(DEP, { successes: 4 }, options);
      expect(late.snapshot).toMatchObject({ state: 'half-open', probeSuccesses: 0 });
      const untagged = await recordBatch(DEP, { successes: 1, outcome: 'success' }, options);
      expect(untagged.snapshot).toMatchObject({ state: 'half-open', probeSuccesses: 0 });
      const probe = await recordBatch(
        DEP,
        { successes: 1, outcome: 'success', ticket: admission.ticket! },
        options,
      );
      expect(probe.snapshot).toMatchObject({ state: 'half-open', probeSuccesses: 1 });
    });

    it('keeps dependencies apart', async () => {
      const [store] = await setup();
      await tripOpen(store!);
      expect((await store!.acquire('mail', options)).allowed).toBe(true);
      expect((await store!.read('mail', options)).state).toBe('closed');
    });

    describe('operator overrides', () => {
      const why = { reason: 'search cluster reindexing', by: 'alice' };
      const held = (state: 'open' | 'closed', atMs = T0) => ({ state, ...why, atMs });
      const override = (store: BreakerStore, op: 'force-open' | 'force-closed' | 'reset', by = why) =>
        store.override!(DEP, op, by, options);

      it('force-open holds a closed breaker open for every store, past the cool-down and any expiry', async () => {
        const [a, b] = await setup(2);
        await feed(a!, 'ss');
        const forced = await override(a!, 'force-open');
        expect(forced.transitions).toEqual([{ from: 'closed', to: 'open', reason: 'forced-open', atMs: T0 }]);
        expect(forced.snapshot).toMatchObject({ state: 'open', openedAtMs: T0, override: held('open') });
        expect(forced.snapshot.halfOpenAtMs).toBeUndefined();
        clock.advance(10 * (options.windowMs + options.coolDownMs));
        const refused = await b!.acquire(DEP, options);
        expect(refused).toMatchObject({ allowed: false, probe: false, transitions: [] });
        expect(refused.snapshot).toMatchObject({ state: 'open', override: held('open') });
        // Outcomes of calls already under way are counted; they change nothing else.
        const late = await b!.record(DEP, 'success', options);
        expect(late.snapshot).toMatchObject({ state: 'open', successes: 1, override: held('open') });
      });

      it('force-closed holds an open breaker closed: every call goes through, failures never open it', async () => {
        const [store] = await setup();
        await tripOpen(store!);
        clock.advance(1_000);
        const forced = await override(store!, 'force-closed');
        expect(forced.transitions).toEqual([
          { from: 'open', to: 'closed', reason: 'forced-closed', atMs: T0 + 1_000 },
        ]);
        expect(forced.snapshot).toMatchObject({
          state: 'closed',
          volume: 0,
          consecutiveFailures: 0,
          override: held('closed', T0 + 1_000),
        });
        const failed = await feed(store!, 'f'.repeat(20));
        expect(failed?.transitions).toEqual([]);
        expect(failed?.snapshot).toMatchObject({ state: 'closed', failures: 20, consecutiveFailures: 20 });
        expect((await store!.acquire(DEP, options)).allowed).toBe(true);
      });

      it('reset lifts an override and starts afresh; the breaker trips on its own again', async () => {
        const [a, b] = await setup(2);
        await override(a!, 'force-open');
        clock.advance(2_000);
        const reset = await override(b!, 'reset');
        expect(reset.transitions).toEqual([
          { from: 'open', to: 'closed', reason: 'reset', atMs: T0 + 2_000 },
        ]);
        expect(reset.snapshot).toMatchObject({ state: 'closed', volume: 0, consecutiveFailures: 0 });
        expect(reset.snapshot.override).toBeUndefined();
        expect(reset.snapshot.openedAtMs).toBeUndefined();
        const read = await a!.read(DEP, options);
        expect(read).toMatchObject({ state: 'closed', volume: 0 });
        expect(read.override).toBeUndefined();
        expect((await feed(a!, 'fffff'))?.transitions.map((t) => t.reason)).toEqual(['consecutive-failures']);
      });

      it('forcing the state it is in changes nothing but the hold; a second override replaces the first', async () => {
        const [store] = await setup();
        await tripOpen(store!);
        const forced = await override(store!, 'force-open');
        expect(forced.transitions).toEqual([]);
        expect(forced.snapshot).toMatchObject({ state: 'open', openedAtMs: T0, override: held('open') });
        clock.advance(100);
        const closed = await override(store!, 'force-closed', { reason: 'false alarm', by: 'bob' });
        expect(closed.snapshot.override).toEqual({
          state: 'closed',
          reason: 'false alarm',
          by: 'bob',
          atMs: T0 + 100,
        });
      });

      it('refuses an override without a reason, or of an unknown kind, and changes nothing', async () => {
        const [store] = await setup();
        await expect(override(store!, 'force-open', { reason: '  ', by: 'alice' })).rejects.toThrow(
          /reason: a breaker override needs a reason/,
        );
        await expect(store!.override!(DEP, 'open' as never, why, options)).rejects.toThrow(
          'breaker override "open": use one of force-open, force-closed, reset',
        );
        expect((await store!.acquire(DEP, options)).allowed).toBe(true);
      });
    });
  });
}
