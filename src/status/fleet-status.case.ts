/**
 * The fleet-status read model over real stores, written once and run against each backend (memory,
 * Redis, PostgreSQL): the same writes give the same status, field for field, flow control's kill switch
 * and down marks included. Every case runs on a FakeClock that the stores take as their time (the Redis
 * and PostgreSQL stores through their test-only clock options).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../breaker/options.js';
import type { BreakerListing, BreakerStore } from '../breaker/types.js';
import { RetryBudget } from '../budget/retry-budget.js';
import type { BudgetStore } from '../budget/store.js';
import { FakeClock } from '../common/clock.js';
import type { DeadLetterStore } from '../runtime/contracts.js';
import { sampleDeadLetter } from '../runtime/dead-letter-store.case.js';
import type { FlowStore } from '../runtime/flow-control/store.js';
import { flowStatusOf } from './flow.js';
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
  });
}
