/**
 * The replay-run store contract, written once and run against every implementation (memory, Redis,
 * PostgreSQL) with no branch for any of them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { REPLAY_RUNS_KEPT, type ReplayRun, type ReplayRunStore } from './replay-runs.js';

/** Fresh, empty stores over one shared place (as several processes see it), `count` of them. */
export interface ReplayRunStoreHarness {
  stores: ReplayRunStore[];
  close(): Promise<void>;
}

export type OpenReplayRunStores = (count: number) => Promise<ReplayRunStoreHarness>;

const T0 = 1_700_000_000_000;

/** A new run of `total` records, as `createReplayRun` writes one. */
function newRun(total: number, extra: Partial<ReplayRun> = {}): Omit<ReplayRun, 'id' | 'version'> {
  return {
    queue: 'index',
    status: 'pending',
    preview: {
      queue: 'index',
      filter: { reason: 'breaker-open' },
      total,
      byReason: { 'breaker-open': total },
      byDependency: { search: total },
      malformed: 0,
    },
    createdBy: 'alice',
    reason: 'search is back',
    createdAtMs: T0,
    whenHealthy: true,
    total,
    cursor: 0,
    moved: 0,
    skipped: 0,
    failed: 0,
    failures: [],
    updatedAtMs: T0,
    ...extra,
  };
}

const idsOf = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `r-${from + i}`);

/** Registers the replay-run store conformance cases under `describe(name)`. */
export function describeReplayRunStore(name: string, open: OpenReplayRunStores): void {
  describe(`${name} (replay-run store contract)`, () => {
    let harness: ReplayRunStoreHarness | undefined;
    afterEach(async () => {
      await harness?.close();
      harness = undefined;
    });
    async function setup(count = 1): Promise<ReplayRunStore[]> {
      harness = await open(count);
      return harness.stores;
    }

    it('stores a run as given, with an id and version 1; an unknown id reads as absent', async () => {
      const [store] = await setup();
      const fields = newRun(3);
      const created = await store!.createRun(fields, idsOf(3));
      expect(created).toEqual({ ...fields, id: created.id, version: 1 });
      expect(created.id).toMatch(/^\S+$/);
      expect(await store!.getRun(created.id)).toEqual(created);
      expect(await store!.getRun('999999')).toBeUndefined();
      expect(await store!.getRun('not-an-id')).toBeUndefined();
    });

    it('keeps the snapshot of record ids in order, and pages through it from any position', async () => {
      const [store] = await setup();
      // More than a thousand: past any chunk a store writes them in.
      const ids = idsOf(2_500);
      const run = await store!.createRun(newRun(ids.length), ids);
      expect(await store!.runRecordIds(run.id, 0, 3)).toEqual(['r-0', 'r-1', 'r-2']);
      expect(await store!.runRecordIds(run.id, 999, 3)).toEqual(['r-999', 'r-1000', 'r-1001']);
      expect(await store!.runRecordIds(run.id, 2_498, 10)).toEqual(['r-2498', 'r-2499']);
      expect(await store!.runRecordIds(run.id, 2_500, 10)).toEqual([]);
      expect(await store!.runRecordIds(run.id, 0, 0)).toEqual([]);
      const all: string[] = [];
      for (let from = 0; from < ids.length; from += 700)
        all.push(...(await store!.runRecordIds(run.id, from, 700)));
      expect(all).toEqual(ids);
      const empty = await store!.createRun(newRun(0), []);
      expect(await store!.runRecordIds(empty.id, 0, 10)).toEqual([]);
      expect(await store!.getRun(empty.id)).toMatchObject({ total: 0, version: 1 });
      expect(await store!.runRecordIds('999999', 0, 10)).toEqual([]);
    });

    it('gives every run its own id, across stores over the same place, and keeps their snapshots apart', async () => {
      const [a, b] = await setup(2);
      const runs = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a! : b!).createRun(newRun(2), idsOf(2, i * 10))),
      );
      expect(new Set(runs.map((r) => r.id)).size).toBe(10);
      for (const [i, run] of runs.entries()) {
        expect(await (i % 2 === 0 ? b! : a!).runRecordIds(run.id, 0, 5)).toEqual(idsOf(2, i * 10));
        expect(await b!.getRun(run.id)).toEqual(run);
      }
    });

    it('writes an update only over the version it read, bumping it; a stale one writes nothing', async () => {
      const [store] = await setup();
      const run = await store!.createRun(newRun(10), idsOf(10));
      const next = await store!.updateRun({ ...run, status: 'running', owner: 'a', cursor: 4, moved: 4 });
      expect(next).toEqual({ ...run, status: 'running', owner: 'a', cursor: 4, moved: 4, version: 2 });
      expect(await store!.getRun(run.id)).toEqual(next);
      // Written by a process that read version 1: loses.
      expect(await store!.updateRun({ ...run, status: 'cancelled' })).toBeUndefined();
      expect(await store!.getRun(run.id)).toEqual(next);
      // Fields dropped by an update are gone from the stored run.
      const { owner: _, ...withoutOwner } = next!;
      const third = await store!.updateRun({ ...withoutOwner, failures: [{ id: 'r-1', error: 'boom' }] });
      expect(await store!.getRun(run.id)).toEqual(third);
      expect(third).not.toHaveProperty('owner');
      expect(await store!.updateRun({ ...run, id: '999999' })).toBeUndefined();
    });

    it('lets exactly one of two processes that read the same version write', async () => {
      const [a, b] = await setup(2);
      const run = await a!.createRun(newRun(5), idsOf(5));
      for (let round = 0; round < 5; round++) {
        const read = (await a!.getRun(run.id))!;
        const results = await Promise.all([
          a!.updateRun({ ...read, owner: 'a', cursor: read.cursor + 1 }),
          b!.updateRun({ ...read, owner: 'b', cursor: read.cursor + 1 }),
        ]);
        const won = results.filter((r) => r !== undefined);
        expect(won).toHaveLength(1);
        expect(await b!.getRun(run.id)).toEqual(won[0]);
      }
      expect(await a!.getRun(run.id)).toMatchObject({ cursor: 5, version: 6 });
    });

    it('lists the newest 100 runs, newest first', async () => {
      const [store] = await setup();
      const created: ReplayRun[] = [];
      for (let i = 0; i < 102; i++)
        created.push(await store!.createRun(newRun(1, { createdAtMs: T0 + i }), ['r']));
      const listed = await store!.listRuns();
      expect(listed).toHaveLength(100);
      expect(listed.map((r) => r.id)).toEqual(
        created
          .slice(2)
          .reverse()
          .map((r) => r.id),
      );
      const updated = await store!.updateRun({ ...created[101]!, status: 'done' });
      expect((await store!.listRuns())[0]).toEqual(updated);
    });

    it('keeps the newest 200 runs with their snapshots, and every older run started and open', async () => {
      expect(REPLAY_RUNS_KEPT).toBe(200);
      const [store] = await setup();
      const open = await store!.updateRun({
        ...(await store!.createRun(newRun(1), ['open-1'])),
        startedAtMs: T0,
        status: 'running',
      });
      const done = await store!.updateRun({
        ...(await store!.createRun(newRun(1), ['done-1'])),
        startedAtMs: T0,
        status: 'done',
      });
      const preview = await store!.createRun(newRun(1), ['preview-1']);
      const created: ReplayRun[] = [];
      for (let i = 0; i < 200; i++) created.push(await store!.createRun(newRun(1), [`r-${i}`]));
      // The 200 newest, and the open run before them; the finished run and the preview are gone.
      expect(await store!.getRun(open!.id)).toEqual(open);
      expect(await store!.runRecordIds(open!.id, 0, 10)).toEqual(['open-1']);
      for (const gone of [done!, preview]) {
        expect(await store!.getRun(gone.id)).toBeUndefined();
        expect(await store!.runRecordIds(gone.id, 0, 10)).toEqual([]);
      }
      expect(await store!.getRun(created[0]!.id)).toEqual(created[0]);
      expect(await store!.runRecordIds(created[0]!.id, 0, 10)).toEqual(['r-0']);
      expect(await store!.startedRuns()).toEqual([open]);
    });

    it('lists every started run not done or cancelled, oldest first, however many runs came after it', async () => {
      const [store, other] = await setup(2);
      const start = (run: ReplayRun) => store!.updateRun({ ...run, startedAtMs: T0, status: 'running' });
      const first = (await start(await store!.createRun(newRun(1), ['r'])))!;
      const done = (await start(await store!.createRun(newRun(1), ['r'])))!;
      const cancelled = (await start(await store!.createRun(newRun(1), ['r'])))!;
      const interrupted = (await start(await store!.createRun(newRun(1), ['r'])))!;
      expect(await store!.updateRun({ ...done, status: 'done' })).toBeDefined();
      expect(await other!.updateRun({ ...cancelled, status: 'cancelled' })).toBeDefined();
      const paused = await other!.updateRun({
        ...interrupted,
        status: 'pending',
        stoppedBecause: 'interrupted',
      });
      for (let i = 0; i < 100; i++) await store!.createRun(newRun(1), ['r']);
      expect(await other!.startedRuns()).toEqual([first, paused]);
      expect(await store!.startedRuns()).toEqual([first, paused]);
    });
  });
}
