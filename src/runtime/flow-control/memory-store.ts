import { type Clock, systemClock } from '../../common/clock.js';
import { pace, paceMany } from './pacing.js';
import { type SlowStartRamp, slowStartRate } from './slow-start.js';
import { byQueueThenWorker, type FlowSnapshot, type FlowStore, type PausedWorkerEntry } from './store.js';

interface DependencyFlow {
  down: boolean;
  recoveredAtMs?: number;
  tatMs: number;
  parked: Map<string, string[]>;
  released: Map<string, Set<string>>;
  /** Paused-worker entries by `[queue, worker]` as JSON (an injective key). */
  paused: Map<string, PausedWorkerEntry>;
}

/**
 * A {@link FlowStore} in one process, on an injectable clock: for a single worker, the simulator and tests.
 * Park lists do not expire here (the process holds them); released marks go when claimed.
 *
 * @example
 * const store = new MemoryFlowStore({ clock: new FakeClock(0) });
 * await store.markDown('search');
 * (await store.markUp('search')).recoveredAtMs; // 0
 */
export class MemoryFlowStore implements FlowStore {
  readonly #clock: Clock;
  readonly #deps = new Map<string, DependencyFlow>();
  #off = false;

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  read(dependency: string): FlowSnapshot {
    const flow = this.#deps.get(dependency);
    return snapshotOf(flow, this.#clock.now(), this.#off);
  }

  markDown(dependency: string): void {
    this.#flow(dependency).down = true;
  }

  markUp(dependency: string): FlowSnapshot {
    const flow = this.#flow(dependency);
    const now = this.#clock.now();
    if (flow.down) {
      flow.down = false;
      flow.recoveredAtMs = now;
      flow.tatMs = now;
    }
    return snapshotOf(flow, now, this.#off);
  }

  admit(dependency: string, ramp: SlowStartRamp, maxWaitMs: number) {
    const flow = this.#flow(dependency);
    const now = this.#clock.now();
    const verdict = pace(flow.tatMs, now, rateOf(flow, now, ramp), maxWaitMs);
    flow.tatMs = verdict.tatMs;
    return verdict;
  }

  park(dependency: string, queue: string, jobId: string): number {
    const list = listOf(this.#flow(dependency).parked, queue, () => []);
    list.push(jobId);
    return list.length;
  }

  release(dependency: string, queue: string, ramp: SlowStartRamp, max: number, horizonMs: number): string[] {
    const flow = this.#flow(dependency);
    const list = flow.parked.get(queue) ?? [];
    const now = this.#clock.now();
    const { granted, tatMs } = paceMany(
      flow.tatMs,
      now,
      rateOf(flow, now, ramp),
      Math.min(max, list.length),
      horizonMs,
    );
    const ids = list.splice(0, granted);
    if (ids.length === 0) return ids;
    flow.tatMs = tatMs;
    const released = listOf(flow.released, queue, () => new Set<string>());
    for (const id of ids) released.add(id);
    return ids;
  }

  claimReleased(dependency: string, queue: string, jobId: string): boolean {
    return this.#deps.get(dependency)?.released.get(queue)?.delete(jobId) ?? false;
  }

  parked(dependency: string, queue: string): number {
    return this.#deps.get(dependency)?.parked.get(queue)?.length ?? 0;
  }

  notePaused(dependency: string, queue: string, worker: string, forMs: number, ttlMs: number): void {
    const paused = this.#flow(dependency).paused;
    const key = JSON.stringify([queue, worker]);
    const now = this.#clock.now();
    const known = paused.get(key);
    const sinceMs = known && known.expiresAtMs > now ? known.sinceMs : now;
    paused.set(key, { queue, worker, sinceMs, untilMs: now + forMs, expiresAtMs: now + ttlMs });
  }

  clearPaused(dependency: string, queue: string, worker: string): void {
    this.#deps.get(dependency)?.paused.delete(JSON.stringify([queue, worker]));
  }

  pausedWorkers(dependency: string): PausedWorkerEntry[] {
    const now = this.#clock.now();
    const entries = [...(this.#deps.get(dependency)?.paused.values() ?? [])];
    return entries.filter((e) => e.expiresAtMs > now).sort(byQueueThenWorker);
  }

  switchedOff(): boolean {
    return this.#off;
  }

  setOff(off: boolean): void {
    this.#off = off;
  }

  #flow(dependency: string): DependencyFlow {
    let flow = this.#deps.get(dependency);
    if (!flow) {
      flow = { down: false, tatMs: 0, parked: new Map(), released: new Map(), paused: new Map() };
      this.#deps.set(dependency, flow);
    }
    return flow;
  }
}

function rateOf(flow: DependencyFlow, now: number, ramp: SlowStartRamp): number {
  return slowStartRate(flow.recoveredAtMs === undefined ? undefined : now - flow.recoveredAtMs, ramp);
}

function snapshotOf(flow: DependencyFlow | undefined, nowMs: number, off: boolean): FlowSnapshot {
  const snapshot: FlowSnapshot = { down: flow?.down ?? false, nowMs, off };
  if (flow?.recoveredAtMs !== undefined) snapshot.recoveredAtMs = flow.recoveredAtMs;
  return snapshot;
}

function listOf<T>(map: Map<string, T>, key: string, make: () => T): T {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}
