import { expect } from 'vitest';
import type { FlowStore } from '../../src/runtime/flow-control/store.js';

/**
 * The flow state both `stormguard flow status` tests read, on Redis and on PostgreSQL: search down with
 * three jobs parked in `index` and two workers paused, mail untouched. Written through the store, read
 * back through the CLI, so the two backends are held to one expected report.
 */
export async function seedFlowStatus(store: FlowStore): Promise<void> {
  await store.markDown('search');
  for (const id of ['1', '2', '3']) await store.park('search', 'index', id, 60_000);
  await store.notePaused('search', 'index', 'host-a:1:1', 30_000, 600_000);
  await store.notePaused('search', 'crawl', 'host-b:2:1', 30_000, 600_000);
}

/** The arguments of the status command the seeded state is read with (backend flags go after). */
export const STATUS_ARGS = [
  'flow',
  'status',
  'search',
  'mail',
  '--queue',
  'index',
  '--prefix',
  'cli',
] as const;

/** Checks `flow status --json` of the seeded state. */
export function expectSeededStatusReport(stdout: string): void {
  const report = JSON.parse(stdout);
  // Server time: the pause's length is what was recorded.
  for (const paused of report.dependencies[0].pausedWorkers)
    expect(paused.untilMs - paused.sinceMs).toBe(30_000);
  const pausedWorker = (queue: string, worker: string) => ({
    queue,
    worker,
    sinceMs: expect.any(Number),
    untilMs: expect.any(Number),
  });
  expect(report).toEqual({
    prefix: 'cli',
    on: true,
    queue: 'index',
    dependencies: [
      {
        dependency: 'search',
        down: true,
        parked: 3,
        pausedWorkers: [pausedWorker('crawl', 'host-b:2:1'), pausedWorker('index', 'host-a:1:1')],
      },
      { dependency: 'mail', down: false, parked: 0, pausedWorkers: [] },
    ],
  });
}

/** `flow status search --queue index` of the seeded state, as a person reads it. */
export const SEEDED_STATUS_TEXT =
  'flow control is on fleet-wide (prefix cli)\n' +
  'search: down, 3 parked in index, 2 workers paused (crawl: host-b:2:1, index: host-a:1:1)\n';
