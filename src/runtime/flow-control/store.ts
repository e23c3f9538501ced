import type { MaybePromise } from '../contracts.js';
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
 * Where flow control's fleet-wide state lives: per dependency, the down mark and recovery time that start
 * slow start, the pacer's state, and a park list per queue of jobs held while the dependency is down
 * (released in order); and one fleet-wide kill switch. Every operation is atomic and takes time from the
 * store. Implementations: memory (one process, the simulator, tests), Redis (every key of a dependency
 * in its hash slot, `{<prefix>:d:<dependency>}`) and PostgreSQL (rows locked per operation); each passes
 * `store.case.ts`.
 *
 * @example
 * const store: FlowStore = new MemoryFlowStore({ clock });
 * await store.markDown('search');
 */
export interface FlowStore {
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
  /** The fleet-wide kill switch: true while flow control is off everywhere. Never writes. */
  switchedOff(): MaybePromise<boolean>;
  /** Sets the fleet-wide kill switch (true: flow control off everywhere). */
  setOff(off: boolean): MaybePromise<void>;
}
