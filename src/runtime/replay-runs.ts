import type { DeadLetterReason } from '../policy/types.js';
import type { DeadLetterFilter } from './contracts.js';

/**
 * A dry run of a bulk replay, on a snapshot: what would move, and how long it would take.
 *
 * @example
 * // { queue: 'index', total: 1200, byReason: { 'breaker-open': 1200 }, byDependency: { search: 1200 },
 * //   ratePerSecond: 20, estimatedMs: 60000 }
 */
export interface ReplayPreview {
  queue: string;
  filter: DeadLetterFilter;
  total: number;
  byReason: Partial<Record<DeadLetterReason, number>>;
  byDependency: Record<string, number>;
  /** Malformed records the filter met: never replayed. */
  malformed: number;
  /** Records filed in their safe form (their job's data was not kept) the filter met: never replayed. Absent when none. */
  withheld?: number;
  ratePerSecond?: number;
  /** `total / ratePerSecond` in ms; absent without a rate (as fast as the queue takes them). */
  estimatedMs?: number;
}

/**
 * A bulk replay stored beside the dead letters, so any process can run it, stop, and another go on:
 * its snapshot of record ids (kept apart, see {@link ReplayRunStore.runRecordIds}), its progress cursor,
 * and each record that failed with the reason. Plain JSON.
 *
 * @example
 * // { id: '3', queue: 'index', status: 'running', total: 1200, cursor: 400, moved: 398, skipped: 1, ... }
 */
export interface ReplayRun {
  id: string;
  queue: string;
  status: 'pending' | 'running' | 'done' | 'cancelled';
  preview: ReplayPreview;
  /** Who created it (identity or `anonymous`), and why. */
  createdBy: string;
  reason?: string;
  createdAtMs: number;
  /**
   * When a process first took the run, and who started it (`startReplayRun`, or the first runner). A run
   * created and never started is a preview; one started and neither done nor cancelled is there to go on.
   */
  startedAtMs?: number;
  startedBy?: string;
  /** Wait while the record's dependency is unhealthy (budget denying, breaker open) before each record. */
  whenHealthy: boolean;
  ratePerSecond?: number;
  total: number;
  /** How many snapshot entries were handled: the next record is `runRecordIds(id, cursor, …)[0]`. */
  cursor: number;
  moved: number;
  skipped: number;
  /** Records that could not be moved, with the reason (the newest 1 000); they stay in the store. */
  failures: { id: string; jobId?: string; error: string }[];
  failed: number;
  /** The process running it, and until when its lease holds (epoch ms on the runners' clock). */
  owner?: string;
  leaseUntilMs?: number;
  /** Set while the runner waits for this dependency to be healthy. */
  waitingFor?: string;
  updatedAtMs: number;
  finishedAtMs?: number;
  stoppedBecause?: string;
  /** Bumped by every update: an update names the version it read, and loses to any other in between. */
  version: number;
}

/**
 * How many runs a replay-run store keeps: creating one removes, with their snapshots, the runs older
 * than the newest this many, except those started and neither done nor cancelled (a runner goes on with
 * them). Previews and finished runs do not pile up.
 *
 * @example
 * (await runs.listRuns()).length <= REPLAY_RUNS_KEPT; // true
 */
export const REPLAY_RUNS_KEPT = 200;

/**
 * Where replay runs live, next to the dead letters (memory, Redis). Every write of a run is a
 * compare-and-set on its `version`, so two processes never both run one.
 *
 * @example
 * const runs: ReplayRunStore = new MemoryReplayRunStore();
 */
export interface ReplayRunStore {
  /**
   * Stores a new run with its snapshot of record ids; returns it with its id. Runs older than the newest
   * {@link REPLAY_RUNS_KEPT} go, unless started and open.
   */
  createRun(run: Omit<ReplayRun, 'id' | 'version'>, recordIds: readonly string[]): Promise<ReplayRun>;
  getRun(id: string): Promise<ReplayRun | undefined>;
  /** Every run, newest first (the newest 100). */
  listRuns(): Promise<ReplayRun[]>;
  /**
   * Every run started and neither done nor cancelled, oldest first, however many runs came after it
   * (previews included): what a runner goes on with after a process stopped.
   */
  startedRuns(): Promise<ReplayRun[]>;
  /** `count` ids of the snapshot from position `from`. */
  runRecordIds(id: string, from: number, count: number): Promise<string[]>;
  /** Writes `run` if the stored version is `run.version`, bumping it; false (and nothing written) otherwise. */
  updateRun(run: ReplayRun): Promise<ReplayRun | undefined>;
}

/**
 * Replay runs in one process's memory: for tests and single-process tools.
 *
 * @example
 * const runs = new MemoryReplayRunStore();
 */
export class MemoryReplayRunStore implements ReplayRunStore {
  readonly #runs = new Map<string, { json: string; ids: readonly string[] }>();
  #seq = 0;

  async createRun(run: Omit<ReplayRun, 'id' | 'version'>, recordIds: readonly string[]): Promise<ReplayRun> {
    const stored: ReplayRun = { ...run, id: String(++this.#seq), version: 1 };
    this.#runs.set(stored.id, { json: JSON.stringify(stored), ids: [...recordIds] });
    for (const [id, entry] of this.#runs) {
      if (Number(id) > this.#seq - REPLAY_RUNS_KEPT) break;
      if (!isStartedAndOpen(JSON.parse(entry.json) as ReplayRun)) this.#runs.delete(id);
    }
    return stored;
  }

  async getRun(id: string): Promise<ReplayRun | undefined> {
    const entry = this.#runs.get(id);
    return entry ? (JSON.parse(entry.json) as ReplayRun) : undefined;
  }

  async listRuns(): Promise<ReplayRun[]> {
    return [...this.#runs.values()]
      .map((e) => JSON.parse(e.json) as ReplayRun)
      .sort((a, b) => Number(b.id) - Number(a.id))
      .slice(0, 100);
  }

  async startedRuns(): Promise<ReplayRun[]> {
    return [...this.#runs.values()]
      .map((e) => JSON.parse(e.json) as ReplayRun)
      .filter(isStartedAndOpen)
      .sort((a, b) => Number(a.id) - Number(b.id));
  }

  async runRecordIds(id: string, from: number, count: number): Promise<string[]> {
    return [...(this.#runs.get(id)?.ids ?? []).slice(from, from + count)];
  }

  async updateRun(run: ReplayRun): Promise<ReplayRun | undefined> {
    const entry = this.#runs.get(run.id);
    if (!entry || (JSON.parse(entry.json) as ReplayRun).version !== run.version) return undefined;
    const next = { ...run, version: run.version + 1 };
    entry.json = JSON.stringify(next);
    return next;
  }
}

/**
 * True for a run that was started and is neither done nor cancelled: the runs a store's `startedRuns` lists.
 *
 * @example
 * isStartedAndOpen({ ...run, startedAtMs: Date.now(), status: 'running' }); // true
 */
export function isStartedAndOpen(run: ReplayRun): boolean {
  return run.startedAtMs !== undefined && (run.status === 'pending' || run.status === 'running');
}
