import { type Clock, systemClock } from '../../common/clock.js';
import {
  checkHoldMs,
  checkLimitExchange,
  effectiveLimit,
  lowestLimit,
  normalOverride,
  takeVerdict,
} from '../limits/limit-maths.js';
import type {
  DependencyLimit,
  LimitExchange,
  LimitExchangeResult,
  LimitHold,
  LimitOverride,
  LimitState,
  LimitStore,
} from '../limits/store.js';
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

/** One dependency's limits (see src/runtime/limits/store.ts); expired entries are dropped by writes. */
interface DependencyLimits {
  declarations: Map<string, { limit: DependencyLimit; expiresAtMs: number }>;
  leases: Map<string, { cost: number; expiresAtMs: number }>;
  override?: LimitOverride | undefined;
  hold?: LimitHold | undefined;
  /** Set by a hold, cleared by the first success after it. */
  probing: boolean;
  recoveredAtMs?: number | undefined;
  tatMs: number;
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
  readonly #limits = new Map<string, DependencyLimits>();
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

  exchangeLimits(dependency: string, request: LimitExchange): LimitExchangeResult {
    checkLimitExchange(request);
    const now = this.#clock.now();
    const limits = this.#limitsOf(dependency, now);
    limits.declarations.set(request.holder, {
      limit: limitOf(request.declared),
      expiresAtMs: now + request.leaseMs,
    });
    for (const { lease, ok } of request.give) {
      limits.leases.delete(lease);
      if (ok && limits.probing && !holdLive(limits.hold, now)) {
        limits.probing = false;
        limits.hold = undefined;
        limits.recoveredAtMs = now;
        limits.tatMs = now;
      }
    }
    for (const lease of request.renew) {
      const held = limits.leases.get(lease);
      if (held) held.expiresAtMs = now + request.leaseMs;
    }
    const result: LimitExchangeResult = {
      granted: 0,
      waitMs: 0,
      state: limitStateOf(dependency, limits, now),
    };
    for (const { lease, cost } of request.take) {
      const { state } = result;
      const verdict = takeVerdict(
        {
          nowMs: now,
          effective: state.effective,
          override: state.override,
          hold: state.hold,
          probing: state.probing,
          probes: request.probes,
          inFlight: state.inFlight - (limits.leases.get(lease)?.cost ?? 0),
          tatMs: limits.tatMs,
          recoveredAtMs: limits.recoveredAtMs,
          ramp: request.ramp,
        },
        cost,
      );
      if (!verdict.granted) {
        result.refusedBy = verdict.refusedBy;
        result.waitMs = verdict.waitMs;
        break;
      }
      limits.leases.set(lease, { cost, expiresAtMs: now + request.leaseMs });
      limits.tatMs = verdict.tatMs;
      result.granted++;
      result.state = limitStateOf(dependency, limits, now);
    }
    return result;
  }

  holdLimits(dependency: string, forMs: number, reason: LimitHold['reason']): LimitState {
    checkHoldMs(forMs);
    const now = this.#clock.now();
    const limits = this.#limitsOf(dependency, now);
    const untilMs = now + forMs;
    if (!holdLive(limits.hold, now) || limits.hold!.untilMs < untilMs) {
      limits.hold = { untilMs, reason, setAtMs: now };
      limits.probing = true;
    }
    return limitStateOf(dependency, limits, now);
  }

  overrideLimits(
    dependency: string,
    override: Parameters<LimitStore['overrideLimits']>[1],
    options: { clearHold?: boolean } = {},
  ): LimitState {
    const fields = override && normalOverride(override);
    const now = this.#clock.now();
    const limits = this.#limitsOf(dependency, now);
    limits.override = fields && {
      ...fields,
      setAtMs: now,
      ...(override?.expiresInMs === undefined ? {} : { expiresAtMs: now + override.expiresInMs }),
    };
    if (options.clearHold === true) {
      limits.hold = undefined;
      limits.probing = false;
      limits.recoveredAtMs = undefined;
    }
    return limitStateOf(dependency, limits, now);
  }

  limitState(dependency: string): LimitState {
    return limitStateOf(dependency, this.#limits.get(dependency), this.#clock.now());
  }

  limitedDependencies(): string[] {
    const now = this.#clock.now();
    return [...this.#limits.entries()]
      .filter(([, limits]) => limitsLive(limits, now))
      .map(([dependency]) => dependency)
      .sort();
  }

  /** The dependency's limits, created when absent, with what has expired by `now` dropped. */
  #limitsOf(dependency: string, now: number): DependencyLimits {
    let limits = this.#limits.get(dependency);
    if (!limits) {
      limits = { declarations: new Map(), leases: new Map(), probing: false, tatMs: 0 };
      this.#limits.set(dependency, limits);
    }
    for (const [holder, { expiresAtMs }] of limits.declarations)
      if (expiresAtMs <= now) limits.declarations.delete(holder);
    for (const [lease, { expiresAtMs }] of limits.leases) if (expiresAtMs <= now) limits.leases.delete(lease);
    if (!overrideLive(limits.override, now)) limits.override = undefined;
    return limits;
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

function holdLive(hold: LimitHold | undefined, now: number): boolean {
  return hold !== undefined && hold.untilMs > now;
}

function overrideLive(override: LimitOverride | undefined, now: number): boolean {
  return override !== undefined && (override.expiresAtMs === undefined || override.expiresAtMs > now);
}

function limitsLive(limits: DependencyLimits, now: number): boolean {
  const live = (entries: Iterable<{ expiresAtMs: number }>) => {
    for (const { expiresAtMs } of entries) if (expiresAtMs > now) return true;
    return false;
  };
  return (
    live(limits.declarations.values()) ||
    live(limits.leases.values()) ||
    overrideLive(limits.override, now) ||
    holdLive(limits.hold, now)
  );
}

/** The dependency's {@link LimitState} at `now`, from what is live (nothing is changed). */
function limitStateOf(dependency: string, limits: DependencyLimits | undefined, now: number): LimitState {
  const declarations: DependencyLimit[] = [];
  for (const { limit, expiresAtMs } of limits?.declarations.values() ?? [])
    if (expiresAtMs > now) declarations.push(limit);
  let inFlight = 0;
  for (const { cost, expiresAtMs } of limits?.leases.values() ?? []) if (expiresAtMs > now) inFlight += cost;
  const override = overrideLive(limits?.override, now) ? limits?.override : undefined;
  const hold = holdLive(limits?.hold, now) ? limits?.hold : undefined;
  const declared = lowestLimit(declarations);
  const state: LimitState = {
    dependency,
    nowMs: now,
    inFlight,
    declared,
    effective: effectiveLimit(declared, override),
    probing: limits?.probing === true && hold === undefined,
  };
  if (override) state.override = { ...override };
  if (hold) state.hold = { ...hold };
  if (limits?.recoveredAtMs !== undefined) state.recoveredAtMs = limits.recoveredAtMs;
  return state;
}

/** The fields a limit sets, and no others. */
function limitOf(limit: DependencyLimit): DependencyLimit {
  const copy: DependencyLimit = {};
  if (limit.maxInFlight !== undefined) copy.maxInFlight = limit.maxInFlight;
  if (limit.maxRatePerSecond !== undefined) copy.maxRatePerSecond = limit.maxRatePerSecond;
  return copy;
}
