import type { MaybePromise } from '../contracts.js';
import type { LimitStore } from '../limits/store.js';
import type { PaceVerdict } from './pacing.js';
import type { SlowStartRamp } from './slow-start.js';

/**
 * A dependency's flow-control state as the fleet shares it, at the store's time.
 *
 * @example
 * const snapshot: FlowSnapshot = { down: false, recoveredAtMs: 1_700_000_000_000, nowMs: 1_700_000_004_000, off: false };
 */
export interface FlowSnapshot {
  /**
   * A worker saw the dependency unhealthy (its breaker open, or its budget denying a retry), and none has
   * seen it recover since.
   */
  down: boolean;
  /** When the dependency last recovered (store time): its slow-start ramp runs from then. */
  recoveredAtMs?: number;
  /** The store's clock when it answered (Redis TIME for Redis). */
  nowMs: number;
  /** The fleet-wide kill switch: true turns flow control off everywhere (admission stays). */
  off: boolean;
}

/**
 * A worker that holds a queue paused for a dependency, as the flow store lists it (store time).
 *
 * @example
 * const entry: PausedWorkerEntry = { queue: 'index', worker: 'host-1:4242:1', sinceMs: 1_700_000_000_000,
 *   untilMs: 1_700_000_030_000, expiresAtMs: 1_700_000_015_000 };
 */
export interface PausedWorkerEntry {
  queue: string;
  /** The worker's name (BullMQ's `name` option, else host, process id and a per-process number). */
  worker: string;
  /** When this worker first recorded the pause (kept across refreshes). */
  sinceMs: number;
  /** The end of the pause as last recorded: the breaker's next probe time, at the latest. */
  untilMs: number;
  /** When the entry ages out unless refreshed again: a crashed worker's entry goes by itself. */
  expiresAtMs: number;
}

/**
 * Where flow control's fleet-wide state lives: per dependency, the down mark and recovery time that start
 * slow start, the pacer's state, a park list per queue of jobs held while the dependency is down
 * (released in order), and the workers holding a queue paused for it (entries that expire unless
 * refreshed); one fleet-wide kill switch; and each dependency's limits ({@link LimitStore}: leased
 * in-flight slots, a rate pacer, Retry-After holds, operator overrides). Every operation is atomic and takes time from the
 * store. Implementations: memory (one process, the simulator, tests), Redis (every key of a dependency
 * in its hash slot, `{<prefix>:d:<dependency>}`) and PostgreSQL (rows locked per operation); each passes
 * `store.case.ts`.
 *
 * @example
 * const store: FlowStore = new MemoryFlowStore({ clock });
 * await store.markDown('search');
 */
export interface FlowStore extends LimitStore {
  /** The dependency's snapshot. Never writes. */
  read(dependency: string): MaybePromise<FlowSnapshot>;
  /** Marks the dependency down: the next {@link markUp} starts its ramp. Idempotent. */
  markDown(dependency: string): MaybePromise<void>;
  /**
   * Marks the dependency up. When it was down, its ramp starts now (store time) and the pacer starts
   * afresh; otherwise nothing changes. Idempotent: many workers may see the recovery.
   */
  markUp(dependency: string): MaybePromise<FlowSnapshot>;
  /** Reserves one attempt slot under the dependency's ramp (see `pace`), granted within `maxWaitMs`. */
  admit(dependency: string, ramp: SlowStartRamp, maxWaitMs: number): MaybePromise<PaceVerdict>;
  /** Appends a job to the dependency's park list of `queue`; returns the list's length. */
  park(dependency: string, queue: string, jobId: string, ttlMs: number): MaybePromise<number>;
  /**
   * Takes, oldest first, up to `max` parked jobs whose ramp slots start within `horizonMs`, and marks each
   * released (so its run is not paced again: {@link claimReleased}). Their ids, in order.
   */
  release(
    dependency: string,
    queue: string,
    ramp: SlowStartRamp,
    max: number,
    horizonMs: number,
  ): MaybePromise<string[]>;
  /** True once for a job {@link release} took: its run already holds a ramp slot. */
  claimReleased(dependency: string, queue: string, jobId: string): MaybePromise<boolean>;
  /** How many jobs of `queue` are parked for the dependency. */
  parked(dependency: string, queue: string): MaybePromise<number>;
  /**
   * Records that `worker` holds `queue` paused for the dependency until `forMs` from now (store time),
   * or refreshes its entry: `sinceMs` stays from the first record while the entry lives. The entry ages
   * out `ttlMs` from now unless recorded again.
   */
  notePaused(
    dependency: string,
    queue: string,
    worker: string,
    forMs: number,
    ttlMs: number,
  ): MaybePromise<void>;
  /** Removes `worker`'s entry for `queue` (it resumed). Idempotent. */
  clearPaused(dependency: string, queue: string, worker: string): MaybePromise<void>;
  /** The live paused-worker entries of the dependency, sorted by queue then worker. Never changes one. */
  pausedWorkers(dependency: string): MaybePromise<PausedWorkerEntry[]>;
  /** The fleet-wide kill switch: true while flow control is off everywhere. Never writes. */
  switchedOff(): MaybePromise<boolean>;
  /** Sets the fleet-wide kill switch (true: flow control off everywhere). */
  setOff(off: boolean): MaybePromise<void>;
}

/**
 * The order every store lists paused-worker entries in: by queue, then worker, in code-unit order.
 *
 * @example
 * entries.sort(byQueueThenWorker);
 */
export function byQueueThenWorker(a: PausedWorkerEntry, b: PausedWorkerEntry): number {
  return compare(a.queue, b.queue) || compare(a.worker, b.worker);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
