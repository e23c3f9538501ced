/**
 * The fleet-status read model over real stores, written once and run against each backend (memory,
 * Redis, PostgreSQL): the same writes give the same status, field for field, flow control's kill switch
 * and down marks included. Every case runs on a FakeClock that the stores take as their time (the Redis
 * and PostgreSQL stores through their test-only clock options).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryAuditLog } from '../audit/memory-audit-log.js';
import { resolveBreakerOptions } from '../breaker/options.js';
import type { BreakerListing, BreakerStore } from '../breaker/types.js';
import { RetryBudget } from '../budget/retry-budget.js';
import type { BudgetStore } from '../budget/store.js';
import { FakeClock } from '../common/clock.js';
import type { DeadLetterStore } from '../runtime/contracts.js';
import { sampleDeadLetter } from '../runtime/dead-letter-store.case.js';
import type { FlowStore } from '../runtime/flow-control/store.js';
import type { LimitExchange } from '../runtime/limits/store.js';
import { flowStatusOf } from './flow.js';
import { changeLimits } from './limit-actions.js';
import { readFleetStatus } from './read-fleet-status.js';

/** Fresh, empty stores of one backend on the given clock. */
export interface FleetStatusHarness {
  budget: BudgetStore;
  breaker: BreakerStore & BreakerListing;
  deadLetters: DeadLetterStore;
  /** A flow store on the same clock. */
  flow: FlowStore;
  close(): Promise<void>;
}

export type OpenFleetStores = (clock: FakeClock) => Promise<FleetStatusHarness>;

const T0 = 1_700_000_000_000;
const STATE = { attempts: 5, deferrals: 0 };
const NO_DEAD_LETTERS = { total: 0, byReason: {}, byQueue: {} };

/** One worker process's exchange: its code's limits, and `take` leases of cost 1. */
function exchange(holder: string, declared: LimitExchange['declared'], take: number): LimitExchange {
  return {
    holder,
    declared,
    leaseMs: 30_000,
    give: [],
    renew: [],
    take: Array.from({ length: take }, (_, i) => ({ lease: `${holder}:${i}`, cost: 1 })),
    probes: 1,
    ramp: { slowStartMs: 30_000, floorPerSecond: 1 },
  };
}

/** Registers the fleet-status cases under `describe(name)`. */
export function describeFleetStatus(name: string, open: OpenFleetStores): void {
  describe(`${name} fleet status`, () => {
    let harness: FleetStatusHarness | undefined;
    afterEach(async () => {
      await harness?.close();
      harness = undefined;
    });

    async function setup() {
      const clock = new FakeClock(T0);
      harness = await open(clock);
      return { clock, ...harness };
    }

    it('is empty, with no errors, on empty stores', async () => {
      const { budget, breaker, deadLetters, clock } = await setup();
      expect(await readFleetStatus({ budget, breaker, deadLetters }, { clock })).toEqual({
        atMs: T0,
        dependencies: [],
        needsAttention: [],
        queues: [],
        errors: [],
      });
    });

    it("shows each dependency's budget, breaker and dead letters, the pressing ones first", async () => {
      const { budget: store, breaker, deadLetters, clock } = await setup();
      // A generous timeout: a loaded machine's first PostgreSQL call (it migrates) must not fall back locally.
      const budget = new RetryBudget({
        store,
        ratio: 0.2,
        windowMs: 60_000,
        minAllowance: 2,
        clock,
        timeoutMs: 60_000,
      });
      budget.recordSuccess('mail', 20);
      await budget.flush();
      expect((await budget.trySpend('mail')).granted).toBe(true);
      for (let i = 0; i < 3; i++) await budget.trySpend('search'); // 2 granted, 1 denied
      const options = resolveBreakerOptions({ consecutiveFailures: 2, coolDownMs: 30_000 });
      await breaker.record('search', 'failure', options);
      await breaker.record('search', 'failure', options);
      await breaker.record('mail', 'success', options);
      await deadLetters.registerQueue('index');
      await deadLetters.registerQueue('empty');
      await deadLetters.file(sampleDeadLetter('1', { reason: 'breaker-open' }), STATE, 60_000);
      await deadLetters.file(sampleDeadLetter('2', { reason: 'max-attempts' }), STATE, 60_000);
      await deadLetters.file(
        sampleDeadLetter('3', { dependency: 'mail', reason: 'permanent' }),
        STATE,
        60_000,
      );
      await deadLetters.file(
        sampleDeadLetter('4', { dependency: 'crm', reason: 'permanent' }),
        STATE,
        60_000,
      );

      const status = await readFleetStatus({ budget: store, breaker, deadLetters }, { clock });
      expect(status.errors).toEqual([]);
      expect(status.atMs).toBe(T0);
      expect(status.needsAttention).toEqual(['search', 'mail']);
      expect(status.dependencies.map((d) => d.dependency)).toEqual(['mail', 'search']);
      const [mail, search] = status.dependencies;
      expect(search).toMatchObject({
        dependency: 'search',
        budget: { allowance: 2, spent: 2, denied: 1, successes: 0, headroom: 0, ratio: 0.2, minAllowance: 2 },
        breaker: { state: 'open', failures: 2, volume: 2, openedAtMs: T0, halfOpenAtMs: T0 + 30_000 },
        deadLetters: { total: 2, byReason: { 'breaker-open': 1, 'max-attempts': 1 }, byQueue: { index: 2 } },
        attention: ['breaker-open', 'budget-exhausted', 'budget-denying', 'dead-letters'],
      });
      expect(mail).toMatchObject({
        budget: { allowance: 4, spent: 1, denied: 0, successes: 20, headroom: 3 },
        breaker: { state: 'closed', successes: 1, volume: 1 },
        deadLetters: { total: 1, byReason: { permanent: 1 }, byQueue: { index: 1 } },
        attention: ['dead-letters'],
      });
      expect(status.queues.map((q) => [q.queue, q.count, q.byReason, q.byDependency])).toEqual([
        ['empty', 0, {}, {}],
        ['index', 4, { permanent: 2, 'max-attempts': 1, 'breaker-open': 1 }, { mail: 1, search: 2 }],
      ]);
    });

    it('reads only the named queues, and lists named dependencies that have no state yet', async () => {
      const { budget, breaker, deadLetters, clock } = await setup();
      await deadLetters.file(sampleDeadLetter('1', { queue: 'a', dependency: 'crm' }), STATE, 60_000);
      await deadLetters.file(sampleDeadLetter('2', { queue: 'b', dependency: 'crm' }), STATE, 60_000);
      const status = await readFleetStatus(
        { budget, breaker, deadLetters },
        { clock, queues: ['b', 'missing'], dependencies: ['crm'] },
      );
      expect(status.queues.map((q) => q.queue)).toEqual(['b']);
      expect(status.dependencies).toEqual([
        {
          dependency: 'crm',
          deadLetters: { total: 1, byReason: { 'max-attempts': 1 }, byQueue: { b: 1 } },
          attention: ['dead-letters'],
        },
      ]);
    });

    it('leaves the breakdown by reason out past breakdownLimit, and keeps the totals', async () => {
      const { budget, breaker, deadLetters, clock } = await setup();
      for (const [id, dependency, reason] of [
        ['1', 'search', 'permanent'],
        ['2', 'search', 'max-attempts'],
        ['3', 'mail', 'permanent'],
        ['4', 'mail', 'max-attempts'],
      ] as const)
        await deadLetters.file(sampleDeadLetter(id, { dependency, reason }), STATE, 60_000);
      const status = await readFleetStatus(
        { budget, breaker, deadLetters },
        { clock, dependencies: ['mail', 'search'], breakdownLimit: 1 },
      );
      // Each dependency shares the queue and both reasons with the other: a breakdown walks 2 entries.
      expect(status.dependencies.map((d) => d.deadLetters)).toEqual([
        { total: 2, byQueue: { index: 2 } },
        { total: 2, byQueue: { index: 2 } },
      ]);
    });

    it('shows flow control switched off fleet-wide, a dependency marked down and one recovered', async () => {
      const { budget, breaker, deadLetters, flow, clock } = await setup();
      const sources = { budget, breaker, deadLetters, flow: flowStatusOf(flow) };
      expect((await readFleetStatus(sources, { clock })).flowControl).toEqual({ on: true });
      await flow.markDown('search');
      await flow.markDown('mail');
      clock.advance(5_000);
      await flow.markUp('mail');
      clock.advance(4_000);
      await flow.setOff(true);

      const status = await readFleetStatus(sources, { clock, dependencies: ['mail', 'search'] });
      expect(status.errors).toEqual([]);
      expect(status.flowControl).toEqual({ on: false });
      expect(status.dependencies).toEqual([
        {
          dependency: 'mail',
          deadLetters: NO_DEAD_LETTERS,
          flow: { down: false, recoveredAtMs: T0 + 5_000, recoveredForMs: 4_000 },
          pausedWorkers: 0,
          parkedJobs: 0,
          attention: [],
        },
        {
          dependency: 'search',
          deadLetters: NO_DEAD_LETTERS,
          flow: { down: true },
          pausedWorkers: 0,
          parkedJobs: 0,
          attention: ['marked-down'],
        },
      ]);
      expect(status.needsAttention).toEqual(['search']);

      await flow.setOff(false);
      expect((await readFleetStatus(sources, { clock })).flowControl).toEqual({ on: true });
    });

    it("shows each limited dependency's limits: pinned at its cap, held by Retry-After, paused by an operator", async () => {
      const { flow, clock } = await setup();
      const sources = { limits: flow };
      expect(await readFleetStatus(sources, { clock })).toMatchObject({ dependencies: [], errors: [] });

      // openai: two processes declare 25 and 20 (the lower wins); 20 calls in flight fill it.
      await flow.exchangeLimits('openai', exchange('host-a:1', { maxInFlight: 25 }, 0));
      const taken = await flow.exchangeLimits('openai', exchange('host-b:2', { maxInFlight: 20 }, 21));
      expect([taken.granted, taken.refusedBy]).toEqual([20, 'in-flight']);
      // crm: held for 60 s by a 429's Retry-After, 18 s ago.
      await flow.exchangeLimits('crm', exchange('host-a:1', { maxRatePerSecond: 5 }, 0));
      await flow.holdLimits('crm', 60_000, 'retry-after');
      // mail: paused by an operator for 30 minutes, 18 s ago.
      await flow.overrideLimits('mail', {
        paused: true,
        reason: 'vendor incident',
        by: 'alice',
        expiresInMs: 1_800_000,
      });
      clock.advance(18_000);

      const status = await readFleetStatus(sources, { clock });
      expect(status.errors).toEqual([]);
      expect(status.dependencies).toEqual([
        {
          dependency: 'crm',
          limits: {
            inFlight: 0,
            declared: { maxRatePerSecond: 5 },
            effective: { maxRatePerSecond: 5 },
            hold: { untilMs: T0 + 60_000, reason: 'retry-after', setAtMs: T0, remainingMs: 42_000 },
            probing: false,
            paused: false,
            pinned: false,
          },
          attention: ['limit-held'],
        },
        {
          dependency: 'mail',
          limits: {
            inFlight: 0,
            declared: {},
            effective: {},
            override: {
              paused: true,
              reason: 'vendor incident',
              by: 'alice',
              setAtMs: T0,
              expiresAtMs: T0 + 1_800_000,
              expiresInMs: 1_782_000,
            },
            probing: false,
            paused: true,
            pinned: false,
          },
          attention: ['limit-paused'],
        },
        {
          dependency: 'openai',
          limits: {
            inFlight: 20,
            declared: { maxInFlight: 20 },
            effective: { maxInFlight: 20 },
            probing: false,
            paused: false,
            pinned: true,
          },
          attention: ['limit-pinned'],
        },
      ]);
      expect(status.needsAttention).toEqual(['crm', 'mail', 'openai']);

      // The override lapses by itself, the hold ends, and the leases and declarations of processes
      // that stopped exchanging go: nothing is limited any more.
      clock.advance(1_800_000);
      expect((await readFleetStatus(sources, { clock })).dependencies).toEqual([]);
    });

    it("changes a dependency's limits as an operator does, each change in the audit log", async () => {
      const { flow, clock } = await setup();
      const audit = new MemoryAuditLog({ clock });
      const target = { store: flow, audit };
      const limitsOf = async () =>
        (await readFleetStatus({ limits: flow }, { clock })).dependencies.find(
          (d) => d.dependency === 'openai',
        )?.limits;
      await flow.exchangeLimits('openai', exchange('host-a:1', { maxInFlight: 25 }, 0));
      await flow.holdLimits('openai', 60_000, 'retry-after');

      // set: the fields given; a second set keeps the first's fields and replaces the expiry.
      await changeLimits(target, 'openai', 'set', {
        reason: 'slow down',
        by: 'alice',
        maxInFlight: 10,
        expiresInMs: 3_600_000,
      });
      await changeLimits(target, 'openai', 'set', { reason: 'and pace', by: 'bob', maxRatePerSecond: 2 });
      expect(await limitsOf()).toMatchObject({
        effective: { maxInFlight: 10, maxRatePerSecond: 2 },
        override: { maxInFlight: 10, maxRatePerSecond: 2, reason: 'and pace', by: 'bob' },
        paused: false,
      });
      expect((await limitsOf())?.override?.expiresAtMs).toBeUndefined();

      // pause keeps the set fields; resume lifts only the pause, and keeps the pause's expiry.
      await changeLimits(target, 'openai', 'pause', {
        reason: 'incident',
        by: 'carol',
        expiresInMs: 1_800_000,
      });
      expect(await limitsOf()).toMatchObject({
        paused: true,
        override: { paused: true, maxInFlight: 10, maxRatePerSecond: 2, expiresAtMs: T0 + 1_800_000 },
      });
      clock.advance(60_000);
      const resumed = await changeLimits(target, 'openai', 'resume', {
        reason: 'incident over',
        by: 'carol',
      });
      expect(resumed.state.override).toEqual({
        maxInFlight: 10,
        maxRatePerSecond: 2,
        reason: 'incident over',
        by: 'carol',
        setAtMs: T0 + 60_000,
        expiresAtMs: T0 + 1_800_000,
      });

      // reset: back to code (the worker still declares 25), the hold and its probing gone too.
      await flow.exchangeLimits('openai', exchange('host-a:1', { maxInFlight: 25 }, 0));
      await flow.holdLimits('openai', 60_000, 'retry-after');
      const reset = await changeLimits(target, 'openai', 'reset', { reason: 'back to code', by: 'dave' });
      expect(reset.state).toMatchObject({ effective: { maxInFlight: 25 }, probing: false });
      expect(reset.state.override).toBeUndefined();
      expect(reset.state.hold).toBeUndefined();

      const { entries } = await audit.list({ limit: 10 });
      expect(entries.map((e) => [e.action, e.target, e.by, e.reason, e.detail])).toEqual([
        [
          'limits.reset',
          'openai',
          'dave',
          'back to code',
          {
            from: { maxInFlight: 10, maxRatePerSecond: 2, paused: false },
            to: { maxInFlight: 25, paused: false },
            holdLifted: true,
          },
        ],
        [
          'limits.resume',
          'openai',
          'carol',
          'incident over',
          {
            from: { maxInFlight: 10, maxRatePerSecond: 2, paused: true },
            to: { maxInFlight: 10, maxRatePerSecond: 2, paused: false },
            expiresAtMs: T0 + 1_800_000,
          },
        ],
        [
          'limits.pause',
          'openai',
          'carol',
          'incident',
          {
            from: { maxInFlight: 10, maxRatePerSecond: 2, paused: false },
            to: { maxInFlight: 10, maxRatePerSecond: 2, paused: true },
            expiresAtMs: T0 + 1_800_000,
          },
        ],
        [
          'limits.set',
          'openai',
          'bob',
          'and pace',
          {
            from: { maxInFlight: 10, paused: false },
            to: { maxInFlight: 10, maxRatePerSecond: 2, paused: false },
          },
        ],
        [
          'limits.set',
          'openai',
          'alice',
          'slow down',
          {
            from: { maxInFlight: 25, paused: false },
            to: { maxInFlight: 10, paused: false },
            expiresAtMs: T0 + 3_600_000,
          },
        ],
      ]);
    });
  });
}
