/**
 * The Fleet contract over real stores, written once and run against each backend (memory, Redis,
 * PostgreSQL): one fleet built from one connection gives a working store of every kind, all under its
 * prefix, and its status sources read what those stores hold (flow control included). A second fleet
 * under another prefix, on the same connection, sees none of it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../breaker/options.js';
import { RetryBudget } from '../budget/retry-budget.js';
import { sampleDeadLetter } from '../runtime/dead-letter-store.case.js';
import type { ReplayRun } from '../runtime/replay-runs.js';
import type { Fleet } from './fleet.js';
import { readFleetStatus } from './read-fleet-status.js';

/** Fleets of one backend on one connection (a fresh keyspace or schema), and how to let it go. */
export interface FleetHarness {
  open(prefix: string): Fleet | Promise<Fleet>;
  close(): Promise<void>;
}

const STATE = { attempts: 5, deferrals: 0 };

function newRun(): Omit<ReplayRun, 'id' | 'version'> {
  const now = Date.now();
  return {
    queue: 'index',
    status: 'pending',
    preview: {
      queue: 'index',
      filter: { reason: 'max-attempts' },
      total: 1,
      byReason: { 'max-attempts': 1 },
      byDependency: { search: 1 },
      malformed: 0,
    },
    createdBy: 'alice',
    reason: 'search is back',
    createdAtMs: now,
    whenHealthy: false,
    total: 1,
    cursor: 0,
    moved: 0,
    skipped: 0,
    failed: 0,
    failures: [],
    updatedAtMs: now,
  };
}

/** Registers the Fleet cases under `describe(name)`; `backend` is what each fleet must report. */
export function describeFleet(name: string, backend: string, setup: () => Promise<FleetHarness>): void {
  describe(`${name} fleet`, () => {
    let harness: FleetHarness | undefined;
    const fleets: Fleet[] = [];
    afterEach(async () => {
      for (const fleet of fleets.splice(0)) await fleet.close();
      await harness?.close();
      harness = undefined;
    });

    async function open(prefix: string): Promise<Fleet> {
      harness ??= await setup();
      const fleet = await harness.open(prefix);
      fleets.push(fleet);
      return fleet;
    }

    it('gives a working store of every kind, under its prefix, and reads them all through its status', async () => {
      const fleet = await open('shop');
      expect(fleet.backend).toBe(backend);
      // A harness may put its prefixes under a namespace of its own.
      expect(fleet.prefix).toMatch(/shop$/);

      // A generous timeout: a loaded machine's first PostgreSQL call (it migrates) must not fall back locally.
      const budget = new RetryBudget({
        store: fleet.budget,
        ratio: 0.2,
        windowMs: 60_000,
        minAllowance: 2,
        timeoutMs: 60_000,
      });
      expect((await budget.trySpend('search')).granted).toBe(true);
      await budget.close();

      const options = resolveBreakerOptions({ consecutiveFailures: 2, coolDownMs: 30_000 });
      await fleet.breaker.record('search', 'failure', options);
      await fleet.breaker.record('search', 'failure', options);

      await fleet.deadLetters.file(sampleDeadLetter('1', { reason: 'max-attempts' }), STATE, 60_000);
      expect(await fleet.deadLetters.count('index')).toBe(1);

      const run = await fleet.replayRuns.createRun(newRun(), ['1']);
      expect((await fleet.replayRuns.getRun(run.id))?.createdBy).toBe('alice');
      expect(await fleet.replayRuns.runRecordIds(run.id, 0, 10)).toEqual(['1']);

      await fleet.flow.markDown('search');
      await fleet.flow.setOff(true);
      expect(await fleet.flow.switchedOff()).toBe(true);
      expect((await fleet.flow.read('search')).down).toBe(true);

      await fleet.audit.append({ by: 'alice', action: 'breaker.reset', target: 'search' });
      expect((await fleet.audit.list({ limit: 10 })).entries.map((e) => [e.by, e.action])).toEqual([
        ['alice', 'breaker.reset'],
      ]);

      const status = await readFleetStatus(fleet.status, { throwOnError: true });
      expect(status.flowControl).toEqual({ on: false });
      expect(status.queues.map((q) => [q.queue, q.count])).toEqual([['index', 1]]);
      expect(status.dependencies).toHaveLength(1);
      const [search] = status.dependencies;
      expect(search).toMatchObject({
        dependency: 'search',
        budget: { spent: 1, allowance: 2 },
        breaker: { state: 'open', failures: 2 },
        deadLetters: { total: 1, byQueue: { index: 1 } },
        flow: { down: true },
        pausedWorkers: 0,
        parkedJobs: 0,
      });
      expect(search?.attention).toEqual(['breaker-open', 'marked-down', 'dead-letters']);
    });

    it('keeps fleets under different prefixes apart on one connection', async () => {
      const shop = await open('shop');
      const other = await open('other');
      await shop.flow.setOff(true);
      await shop.flow.markDown('search');
      await shop.deadLetters.file(sampleDeadLetter('1'), STATE, 60_000);
      await shop.replayRuns.createRun(newRun(), ['1']);
      await shop.audit.append({ action: 'dlq.replay', target: 'index' });

      const status = await readFleetStatus(other.status, { throwOnError: true, dependencies: ['search'] });
      expect(status.flowControl).toEqual({ on: true });
      expect(status.queues).toEqual([]);
      expect(status.dependencies.map((d) => [d.dependency, d.flow, d.attention])).toEqual([
        ['search', { down: false }, []],
      ]);
      expect(await other.replayRuns.listRuns()).toEqual([]);
      expect((await other.audit.list({ limit: 10 })).entries).toEqual([]);
    });

    it("reads each dependency's limits from its flow store, and another prefix sees none of them", async () => {
      const shop = await open('shop');
      const other = await open('other');
      await shop.flow.overrideLimits('openai', {
        paused: true,
        maxInFlight: 10,
        reason: 'vendor incident',
        by: 'alice',
      });
      const status = await readFleetStatus(shop.status, { throwOnError: true });
      expect(
        status.dependencies.map((d) => [d.dependency, d.limits?.effective, d.limits?.paused, d.attention]),
      ).toEqual([['openai', { maxInFlight: 10 }, true, ['limit-paused']]]);
      expect((await readFleetStatus(other.status, { throwOnError: true })).dependencies).toEqual([]);
    });

    it('records a dead-letter eviction in its own audit log', async () => {
      const fleet = await open('shop');
      await fleet.deadLetters.registerQueue('index', { maxCount: 1 });
      await fleet.deadLetters.file(sampleDeadLetter('1'), STATE, 60_000);
      await fleet.deadLetters.file(sampleDeadLetter('2'), STATE, 60_000);
      expect(await fleet.deadLetters.count('index')).toBe(1);
      const { entries } = await fleet.audit.list({ limit: 10 });
      expect(entries.map((e) => [e.action, e.target])).toEqual([['dead-letters.evict', 'index']]);
    });
  });
}
