import { randomUUID } from 'node:crypto';
import { globalKey } from '../common/keys.js';
import type { RedisClient } from '../redis/scripts.js';
import type { DeadLetterFilter } from '../runtime/contracts.js';

/**
 * A bulk replay, from its preview (a snapshot of record ids) to its end. Plain JSON, kept next to the
 * stores so a run outlives the browser and the console: a console that starts resumes every run left
 * `running`.
 */
export interface ReplayRun {
  id: string;
  queue: string;
  /** `preview`: a snapshot not started; `running`; `done`; `stopped` (after too many failures in a row). */
  state: 'preview' | 'running' | 'done' | 'stopped';
  filter: DeadLetterFilter;
  /** Records in the snapshot. */
  total: number;
  byReason: Record<string, number>;
  byDependency: Record<string, number>;
  /** Records handled so far (moved, skipped or failed): where a resumed run goes on from. */
  handled: number;
  moved: number;
  skipped: number;
  failed: { id: string; jobId?: string; error: string }[];
  ratePerSecond?: number;
  whenHealthy: boolean;
  /** Set while waiting for this dependency to be healthy. */
  waitingFor?: string;
  by: string;
  createdAtMs: number;
  startedAtMs?: number;
  finishedAtMs?: number;
  stoppedBecause?: string;
}

/** Where runs and their snapshots live. */
export interface ReplayRunStore {
  create(run: Omit<ReplayRun, 'id'>, ids: readonly string[]): Promise<ReplayRun>;
  get(id: string): Promise<ReplayRun | undefined>;
  save(run: ReplayRun): Promise<void>;
  /** The snapshot's record ids from `from`, at most `count`. */
  ids(id: string, from: number, count: number): Promise<string[]>;
  /** Every run, newest first. */
  list(): Promise<ReplayRun[]>;
}

/** Runs kept: the oldest beyond this are forgotten (with their snapshots). */
const MAX_RUNS = 200;

/**
 * Runs in Redis: one hash of runs (JSON) and one list of record ids per snapshot, all under the global
 * tag `{<prefix>:g}` (one hash slot, so a Cluster works).
 */
export function redisReplayRuns(redis: RedisClient, prefix: string): ReplayRunStore {
  const runsKey = globalKey(prefix, 'console-replays');
  const idsKey = (id: string) => globalKey(prefix, `console-replay-ids:${id}`);
  return {
    async create(fields, ids) {
      const run: ReplayRun = { id: randomUUID().slice(0, 8), ...fields };
      const multi = redis.multi().hset(runsKey, run.id, JSON.stringify(run));
      for (let i = 0; i < ids.length; i += 1_000) multi.rpush(idsKey(run.id), ...ids.slice(i, i + 1_000));
      await multi.exec();
      await prune();
      return run;
    },
    async get(id) {
      const text = await redis.hget(runsKey, id);
      return text ? (JSON.parse(text) as ReplayRun) : undefined;
    },
    async save(run) {
      await redis.hset(runsKey, run.id, JSON.stringify(run));
    },
    ids(id, from, count) {
      return redis.lrange(idsKey(id), from, from + count - 1);
    },
    async list() {
      const all = Object.values(await redis.hgetall(runsKey)).map((t) => JSON.parse(t) as ReplayRun);
      return all.sort((a, b) => b.createdAtMs - a.createdAtMs);
    },
  };

  async function prune() {
    const all = Object.values(await redis.hgetall(runsKey)).map((t) => JSON.parse(t) as ReplayRun);
    const old = all.sort((a, b) => b.createdAtMs - a.createdAtMs).slice(MAX_RUNS);
    for (const run of old) await redis.multi().hdel(runsKey, run.id).del(idsKey(run.id)).exec();
  }
}

/** Runs in this process only (lost when it stops): for backends without a shared run store. */
export function memoryReplayRuns(): ReplayRunStore {
  const runs = new Map<string, { run: ReplayRun; ids: readonly string[] }>();
  return {
    async create(fields, ids) {
      const run: ReplayRun = { id: randomUUID().slice(0, 8), ...fields };
      runs.set(run.id, { run: structuredClone(run), ids: [...ids] });
      return run;
    },
    async get(id) {
      const entry = runs.get(id);
      return entry ? structuredClone(entry.run) : undefined;
    },
    async save(run) {
      const entry = runs.get(run.id);
      if (entry) entry.run = structuredClone(run);
    },
    async ids(id, from, count) {
      return [...(runs.get(id)?.ids.slice(from, from + count) ?? [])];
    },
    async list() {
      return [...runs.values()]
        .map((e) => structuredClone(e.run))
        .sort((a, b) => b.createdAtMs - a.createdAtMs);
    },
  };
}
