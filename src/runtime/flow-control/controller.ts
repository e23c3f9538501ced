import { hostname } from 'node:os';
import type { BreakerSnapshot } from '../../breaker/types.js';
import type { BudgetSnapshot } from '../../budget/types.js';
import type { Clock } from '../../common/clock.js';
import type { Disposable } from '../../common/events.js';
import type { BrokenCircuitError } from '../../errors/broken-circuit-error.js';
import { type FlowVerdict, flowVerdict, type HoldKind } from './gate.js';
import {
  type FlowControlOptions,
  type ResolvedFlowControlOptions,
  resolveFlowControlOptions,
} from './options.js';
import { budgetStoppedDenying, type SlowStartRamp } from './slow-start.js';
import type { FlowSnapshot } from './store.js';

/**
 * The breaker as flow control reads it: the fleet's snapshot of a dependency, and its probe count.
 * `CircuitBreaker` is one.
 *
 * @example
 * const breaker: FlowBreaker = new CircuitBreaker({ store: new RedisBreakerStore({ redis }) });
 */
export interface FlowBreaker {
  state(dependency: string): Promise<BreakerSnapshot>;
  optionsFor(dependency: string): { halfOpenProbes: number };
}

/**
 * The retry budget as flow control reads it: the denials this process makes (its `denied` events) and the
 * fleet's state of a dependency. `RetryBudget` is one.
 *
 * @example
 * const budget: FlowBudget = new RetryBudget({ store: new RedisBudgetStore({ redis }) });
 */
export interface FlowBudget {
  state(dependency: string): Promise<BudgetSnapshot>;
  readonly events: {
    on(
      event: 'denied',
      listener: (denial: { dependency: string; mode: 'enforce' | 'shadow' }) => void,
    ): Disposable;
  };
}

/**
 * The budget as flow control reads it, when it can (`RetryBudget` can: its state and `denied` events);
 * `undefined` for a budget that offers neither, which flow control then does without.
 *
 * @example
 * const flowBudget = flowBudgetOf(new RetryBudget({ store })); // the same budget, typed as FlowBudget
 */
export function flowBudgetOf(budget: unknown): FlowBudget | undefined {
  const candidate = budget as Partial<FlowBudget> | undefined;
  return typeof candidate?.state === 'function' && typeof candidate.events?.on === 'function'
    ? (candidate as FlowBudget)
    : undefined;
}

/**
 * What to do with a job before it runs.
 * - `run`: run it (a paced slot, if any, has been waited for).
 * - `pause`: stop the queue's consumption for `forMs` and put the job back unchanged.
 * - `park`: set the job aside (park list, delayed far ahead) until a release brings it back.
 * - `delay`: its paced slot is more than `maxPaceWaitMs` away: delay it `forMs` without charging anything.
 *
 * @example
 * const action: FlowAction = { type: 'park', forMs: 4_000 };
 */
export type FlowAction =
  | { type: 'run' }
  | { type: 'pause'; forMs: number }
  | { type: 'park'; forMs: number }
  | { type: 'delay'; forMs: number };

/**
 * What flow control tells about: a job held (paused or parked; with `shadow: true`, what it would have
 * held), and parked jobs released. Worker events; metrics and logs subscribe.
 *
 * @example
 * worker.events.on('flow-hold', (e) => log.info(`${e.dependency}: ${e.kind} for ${e.forMs} ms (${e.reason})`));
 */
export interface FlowEvents {
  'flow-hold': {
    queue: string;
    dependency: string;
    kind: HoldKind;
    forMs: number;
    reason: 'breaker-open' | 'probe-in-flight';
    shadow: boolean;
  };
  'flow-release': { queue: string; dependency: string; count: number };
}

/**
 * A dependency as one worker's flow control sees it, for gauges and the fleet status.
 *
 * @example
 * const status: FlowDependencyStatus = { dependency: 'search', paused: true, pausedUntilMs: 1_700_000_004_000 };
 */
export interface FlowDependencyStatus {
  dependency: string;
  /** This worker holds the queue paused for the dependency now. */
  paused: boolean;
  pausedUntilMs?: number;
}

/**
 * What a {@link FlowController} needs besides its options.
 *
 * @example
 * const settings: FlowControllerSettings = { queue: 'index', breaker, clock: systemClock, emit: () => {}, internalError: console.error };
 */
export interface FlowControllerSettings {
  queue: string;
  breaker: FlowBreaker;
  clock: Clock;
  emit: <K extends keyof FlowEvents>(event: K, payload: FlowEvents[K]) => void;
  internalError: (error: unknown) => void;
  /**
   * Stops the whole queue's consumption for `forMs`, fleet-wide (BullMQ: the worker's rate limit), while
   * this worker holds the jobs it took. Default: none (only the jobs in hand are held).
   */
  pauseQueue?: (forMs: number) => Promise<void>;
  /** How a paced slot is waited for. Default: a timer. */
  sleep?: (ms: number) => Promise<void>;
  /**
   * The worker's retry budget. Given, a dependency whose budget denies a retry (enforced, not shadow) is
   * marked down in the store, and the first worker that reads it closed with no denial left in the
   * budget's window (`budgetStoppedDenying`) marks it up: the fleet's slow-start ramp starts again, as
   * after a breaker recovery. Default: none (only a breaker recovery starts a ramp).
   */
  budget?: FlowBudget | undefined;
  /**
   * This worker's name in the store's paused-worker entries (what `stormguard flow status` and the
   * console list). Default: `<host>:<process id>:<n>`, n counting the flow controllers of the process.
   */
  worker?: string | undefined;
}

/** What promoting a released job came to: back in the queue, gone (completed, removed), or not delayed yet. */
export type PromoteResult = 'promoted' | 'gone' | 'busy';

/** The jobs of one dependency this worker holds in hand while the queue is paused, and their wake-up. */
interface Hold {
  waiters: Array<(woken: boolean) => void>;
  timer: NodeJS.Timeout | undefined;
  wakeAtMs: number;
}

interface Health {
  breaker: BreakerSnapshot;
  flow: FlowSnapshot;
  /** Local clock when it was read. */
  readAtMs: number;
}

const RUN: FlowAction = Object.freeze({ type: 'run' });
const MIN_HOLD_MS = 50;
/** Every this many release ticks, dependencies with nothing parked here are checked for parks by others. */
const SCAN_EVERY_TICKS = 20;
/** A paused-worker entry outlives this many refresh intervals: one missed refresh does not drop it. */
const PAUSED_ENTRY_REFRESHES = 3;
let controllers = 0;

/**
 * One worker's flow control, knowing no queue library: the gate before every run (hold while the
 * dependency's breaker is open; pace while it recovers), parking, and the release loop that brings parked
 * jobs back in order under slow start. The queue adapter turns its {@link FlowAction}s into its queue's
 * terms and gives it a `promote` for releases.
 *
 * What it reads of a dependency (the breaker snapshot, the flow state, the kill switch) is reused for
 * `stateCacheMs`; a worker that reads the breaker open marks the dependency down, one that reads it closed
 * again marks it up, which starts the fleet's ramp. With a budget, its denials mark the dependency down too,
 * and a budget window free of denials marks it up (docs/flow-control.md, "When a ramp starts").
 *
 * @example
 * const flow = new FlowController({ store, queueDependency: 'search' }, { queue: 'index', breaker, clock, emit, internalError });
 * const action = await flow.beforeRun('search', { jobId: '42', starts: 1 });
 */
export class FlowController {
  readonly options: ResolvedFlowControlOptions;
  readonly #settings: FlowControllerSettings;
  readonly #health = new Map<string, Health>();
  readonly #reading = new Map<string, Promise<Health>>();
  readonly #pausedUntil = new Map<string, number>();
  readonly #holds = new Map<string, Hold>();
  /** Dependencies this worker marked down in the store (once per outage). */
  readonly #markedDown = new Set<string>();
  /** Dependencies this worker marked down for its budget's denials (once per denial episode). */
  readonly #budgetDown = new Set<string>();
  readonly #budgetDenials: Disposable | undefined;
  #off: { value: boolean; readAtMs: number } | undefined;
  #stopped = false;
  /** Dependencies whose jobs this worker runs: the release loop looks after their park lists. */
  readonly #watched = new Set<string>();
  /** Dependencies that may have parked jobs of this queue. */
  readonly #maybeParked = new Set<string>();
  readonly #sleep: (ms: number) => Promise<void>;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #ticks = 0;
  /** This worker's name in the store's paused-worker entries. */
  readonly worker: string;
  /**
   * Dependencies whose pause this worker has recorded in the store, with the local time of the last
   * write (-Infinity: the pause was extended, write again now).
   */
  readonly #pauseNoted = new Map<string, number>();
  #syncingPauses: Promise<void> | undefined;
  #syncPausesAgain = false;

  constructor(options: FlowControlOptions, settings: FlowControllerSettings) {
    this.options = resolveFlowControlOptions(options);
    this.#settings = settings;
    this.worker = settings.worker ?? `${hostname()}:${process.pid}:${++controllers}`;
    this.#sleep =
      settings.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, Math.ceil(ms)).unref()));
    if (this.options.queueDependency !== undefined) this.#watched.add(this.options.queueDependency);
    this.#budgetDenials = settings.budget?.events.on('denied', (denial) => {
      if (denial.mode === 'enforce') this.#budgetDenied(denial.dependency);
    });
  }

  /** Adds dependencies whose park lists this worker looks after (the worker's `dependencies` values). */
  watch(dependencies: Iterable<string>): void {
    for (const dependency of dependencies) this.#watched.add(dependency);
  }

  /** How a held job of `dependency` is held: the queue's own dependency pauses, any other parks. */
  holdKindOf(dependency: string): HoldKind {
    return dependency === this.options.queueDependency ? 'pause' : 'park';
  }

  /**
   * The gate before a run: hold the job while its dependency's breaker is open (or its probes are all
   * in flight), then, while the dependency recovers (or under its `maxRatePerSecond`), take a paced slot,
   * waiting for it when it is near. A job a release brought back runs at once: its release was its slot.
   */
  async beforeRun(dependency: string, job: { jobId: string; starts: number }): Promise<FlowAction> {
    this.#watched.add(dependency);
    const { options } = this;
    const kind = this.holdKindOf(dependency);
    let reported = false;
    let health: Health;
    for (;;) {
      if (!options.enabled || this.#stopped) return RUN;
      health = await this.#read(dependency);
      const verdict = flowVerdict(
        {
          state: health.breaker.state,
          halfOpenInMs: halfOpenInMs(health, this.#settings.clock.now()),
          probesInFlight: health.breaker.probesInFlight,
          halfOpenProbes: this.#settings.breaker.optionsFor(dependency).halfOpenProbes,
        },
        { kind, probeWaitMs: options.probeWaitMs, minHoldMs: MIN_HOLD_MS },
      );
      if (verdict.action === 'run') break;
      if (await this.#switchedOff()) return RUN;
      if (!reported) {
        reported = true;
        this.#report(dependency, verdict);
      }
      if (options.mode === 'shadow') return RUN;
      if (verdict.kind === 'park') return { type: 'park', forMs: verdict.forMs };
      // Paused: the job waits here, in hand, so nothing is fetched again until the dependency can take it.
      if (!(await this.#holdHere(dependency, verdict.forMs))) return { type: 'pause', forMs: verdict.forMs };
    }
    // Healthy again: every job held here re-checks now (and takes its paced slot).
    if (health.breaker.state === 'closed') {
      this.#wakeAll(dependency, true);
      if (this.#pauseNoted.has(dependency)) this.#syncPauses();
    }
    if (options.mode === 'shadow' || !this.#paces(dependency, health) || (await this.#switchedOff()))
      return RUN;
    const store = options.store;
    if (job.starts > 1 && (await store.claimReleased(dependency, this.#settings.queue, job.jobId)))
      return RUN;
    const slot = await store.admit(dependency, this.#ramp(dependency), options.maxPaceWaitMs);
    if (!slot.granted)
      return { type: kind === 'pause' ? 'pause' : 'delay', forMs: Math.max(MIN_HOLD_MS, slot.waitMs) };
    if (slot.waitMs > 0) await this.#sleep(slot.waitMs);
    return RUN;
  }

  /**
   * A job's call to its own dependency was refused by the breaker (half-open, every probe slot taken, or
   * opened since the gate read it): how to hold the job instead of delaying it by its policy. `undefined`
   * when flow control does not hold (off, or in shadow mode).
   */
  async heldByBreaker(dependency: string, refusal: BrokenCircuitError): Promise<FlowAction | undefined> {
    const { options } = this;
    if (!options.enabled || this.#stopped || (await this.#switchedOff())) return undefined;
    this.#health.delete(dependency); // the next gate reads afresh
    const forMs = Math.max(MIN_HOLD_MS, refusal.halfOpenInMs ?? options.probeWaitMs);
    const verdict = {
      action: 'hold',
      kind: this.holdKindOf(dependency),
      forMs,
      reason: refusal.state === 'open' ? 'breaker-open' : 'probe-in-flight',
    } as const;
    this.#report(dependency, verdict);
    if (options.mode === 'shadow') return undefined;
    if (verdict.kind === 'pause') this.#pauseQueue(dependency, forMs);
    return { type: verdict.kind, forMs };
  }

  /**
   * Whether a retry (or a run) the retry budget refuses is held instead of ended as the budget's
   * `onExhausted` says: true while flow control enforces (enabled in this worker, `enforce` mode, not
   * switched off fleet-wide). A kill switch that cannot be read counts as on (reported): holding loses
   * nothing, and the job's `maxAge` still bounds the hold. See `budgetUnderFlow`.
   */
  async holdsBudgetDenials(): Promise<boolean> {
    const { options } = this;
    if (!options.enabled || options.mode === 'shadow') return false;
    try {
      return !(await this.#switchedOff());
    } catch (error) {
      this.#settings.internalError(error);
      return true;
    }
  }

  /** Records a parked job in its dependency's park list; the caller then delays it `parkHorizonMs`. */
  async park(dependency: string, jobId: string): Promise<void> {
    this.#maybeParked.add(dependency);
    // The list outlives the horizon: a job coming back on its own finds its entry gone or stale, never lost.
    await this.options.store.park(dependency, this.#settings.queue, jobId, 2 * this.options.parkHorizonMs);
  }

  /** What this worker holds now, per dependency it has paused. */
  status(): FlowDependencyStatus[] {
    const now = this.#settings.clock.now();
    return [...this.#pausedUntil].map(([dependency, until]) =>
      until > now || (this.#holds.get(dependency)?.waiters.length ?? 0) > 0
        ? { dependency, paused: true, pausedUntilMs: until }
        : { dependency, paused: false },
    );
  }

  /** The queue this flow control serves. */
  get queue(): string {
    return this.#settings.queue;
  }

  /** How many jobs of this queue are parked for `dependency`, fleet-wide. */
  async parked(dependency: string): Promise<number> {
    return this.options.store.parked(dependency, this.#settings.queue);
  }

  /** Dependencies this worker looks after, sorted. */
  dependencies(): string[] {
    return [...this.#watched].sort();
  }

  /** Starts the release loop: every `releaseIntervalMs`, parked jobs of healthy dependencies come back. */
  startReleasing(promote: (jobId: string) => Promise<PromoteResult>): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      this.#syncPauses();
      if (this.#ticking) return;
      this.#ticking = this.releaseOnce(promote)
        .then(() => {})
        .catch((error: unknown) => this.#settings.internalError(error))
        .finally(() => {
          this.#ticking = undefined;
        });
    }, this.options.releaseIntervalMs);
    this.#timer.unref();
  }

  /**
   * Stops the release loop and hands back every job held in hand (each gets a `pause` action: its queue
   * puts it back as it was), then waits for a release in progress.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#budgetDenials?.dispose();
    clearInterval(this.#timer);
    this.#timer = undefined;
    for (const dependency of this.#holds.keys()) this.#wakeAll(dependency, false);
    await this.#ticking;
    // Stopped, this worker holds nothing: its paused-worker entries go now rather than age out.
    await this.#syncingPauses;
    await this.#writePauses().catch((error: unknown) => this.#settings.internalError(error));
  }

  /**
   * One release pass: for each looked-after dependency that may have parked jobs and is not down, takes
   * what the ramp allows (a half-open breaker: as many as it has free probe slots, so a queue whose jobs
   * are all parked still probes) and promotes them, oldest first. With flow control off, everything parked
   * comes back unpaced. Returns how many were promoted.
   */
  async releaseOnce(promote: (jobId: string) => Promise<PromoteResult>): Promise<number> {
    const { options } = this;
    const { queue } = this.#settings;
    const scan = this.#ticks++ % SCAN_EVERY_TICKS === 0;
    let promoted = 0;
    for (const dependency of this.#watched) {
      // A dependency this worker saw marked down is read here too: that read marks it up once it may
      // (`#fetch`). Otherwise a mark left by the last denials of an outage stays when no job comes to read
      // it (the queue drained), and `flow status` says down long after the recovery.
      if (this.#budgetDown.has(dependency) || this.#health.get(dependency)?.flow.down)
        await this.#read(dependency);
      if (!this.#maybeParked.has(dependency)) {
        if (!scan || (await options.store.parked(dependency, queue)) === 0) continue;
        this.#maybeParked.add(dependency);
      }
      const health = await this.#read(dependency);
      const off = !options.enabled || (await this.#switchedOff());
      let max = options.releaseBatch;
      if (!off && health.breaker.state === 'open') continue;
      if (!off && health.breaker.state === 'half-open')
        max = Math.max(
          0,
          this.#settings.breaker.optionsFor(dependency).halfOpenProbes - health.breaker.probesInFlight,
        );
      if (max === 0) continue;
      const ramp = off ? UNPACED : this.#ramp(dependency);
      const ids = await options.store.release(dependency, queue, ramp, max, options.releaseIntervalMs);
      if (ids.length === 0) {
        if ((await options.store.parked(dependency, queue)) === 0) this.#maybeParked.delete(dependency);
        continue;
      }
      let count = 0;
      for (const id of ids) {
        const result = await promote(id);
        if (result === 'promoted') count++;
        // Parked but not moved to delayed yet (it is being parked right now): its turn comes again.
        else if (result === 'busy') await this.park(dependency, id);
      }
      promoted += count;
      if (count > 0) this.#settings.emit('flow-release', { queue, dependency, count });
    }
    return promoted;
  }

  #report(dependency: string, verdict: Extract<FlowVerdict, { action: 'hold' }>): void {
    this.#settings.emit('flow-hold', {
      queue: this.#settings.queue,
      dependency,
      kind: verdict.kind,
      forMs: verdict.forMs,
      reason: verdict.reason,
      shadow: this.options.mode === 'shadow',
    });
  }

  /** Pauses the queue fleet-wide until `forMs` from now, unless a pause already covers that long. */
  #pauseQueue(dependency: string, forMs: number): void {
    const until = this.#settings.clock.now() + forMs;
    if (until <= (this.#pausedUntil.get(dependency) ?? 0) + MIN_HOLD_MS) return;
    this.#pausedUntil.set(dependency, until);
    this.#settings.pauseQueue?.(forMs).catch((error: unknown) => this.#settings.internalError(error));
    this.#pauseNoted.set(dependency, Number.NEGATIVE_INFINITY);
    this.#syncPauses();
  }

  /**
   * Brings this worker's paused-worker entries in the store in line with what it holds ({@link status}),
   * one sync at a time: notes a pause when it starts or is extended and once per `pausedReportMs` while
   * it lasts (never per job), and clears the entry when it ends.
   */
  #syncPauses(): void {
    if (this.#syncingPauses) {
      this.#syncPausesAgain = true;
      return;
    }
    if (this.#pauseNoted.size === 0) return;
    this.#syncingPauses = this.#writePauses()
      .catch((error: unknown) => this.#settings.internalError(error))
      .finally(() => {
        this.#syncingPauses = undefined;
        if (this.#syncPausesAgain) {
          this.#syncPausesAgain = false;
          this.#syncPauses();
        }
      });
  }

  async #writePauses(): Promise<void> {
    const { store, pausedReportMs } = this.options;
    const { queue } = this.#settings;
    const now = this.#settings.clock.now();
    for (const held of this.status()) {
      const { dependency } = held;
      const noted = this.#pauseNoted.get(dependency);
      if (noted === undefined) continue;
      if (held.paused && !this.#stopped) {
        if (now - noted < pausedReportMs) continue;
        const forMs = Math.max(0, (held.pausedUntilMs ?? now) - now);
        await store.notePaused(
          dependency,
          queue,
          this.worker,
          forMs,
          PAUSED_ENTRY_REFRESHES * pausedReportMs,
        );
        this.#pauseNoted.set(dependency, now);
      } else {
        await store.clearPaused(dependency, queue, this.worker);
        this.#pauseNoted.delete(dependency);
      }
    }
  }

  /**
   * Holds a job in hand until it may look again: resolves true when woken, false when the worker stops.
   * One waiter wakes at a time (when the breaker half-opens it may be this worker's one probe); the next
   * wakes `probeWaitMs` later unless the first found the dependency closed, which wakes them all.
   */
  #holdHere(dependency: string, forMs: number): Promise<boolean> {
    this.#pauseQueue(dependency, forMs);
    let hold = this.#holds.get(dependency);
    if (!hold) {
      hold = { waiters: [], timer: undefined, wakeAtMs: 0 };
      this.#holds.set(dependency, hold);
    }
    const held = hold;
    const waiting = new Promise<boolean>((resolve) => held.waiters.push(resolve));
    this.#wakeAt(dependency, held, this.#settings.clock.now() + forMs);
    return waiting;
  }

  #wakeAt(dependency: string, hold: Hold, atMs: number): void {
    if (hold.timer && hold.wakeAtMs <= atMs) return;
    clearTimeout(hold.timer);
    hold.wakeAtMs = atMs;
    hold.timer = setTimeout(
      () => {
        hold.timer = undefined;
        hold.waiters.shift()?.(true);
        if (hold.waiters.length > 0)
          this.#wakeAt(dependency, hold, this.#settings.clock.now() + this.options.probeWaitMs);
      },
      Math.max(0, atMs - this.#settings.clock.now()),
    );
    hold.timer.unref();
  }

  #wakeAll(dependency: string, woken: boolean): void {
    const hold = this.#holds.get(dependency);
    if (!hold) return;
    clearTimeout(hold.timer);
    hold.timer = undefined;
    for (const resolve of hold.waiters.splice(0)) resolve(woken);
  }

  /** The fleet-wide kill switch, reused for `stateCacheMs`. */
  async #switchedOff(): Promise<boolean> {
    const now = this.#settings.clock.now();
    if (this.#off && now - this.#off.readAtMs < this.options.stateCacheMs) return this.#off.value;
    const value = await this.options.store.switchedOff();
    this.#off = { value, readAtMs: now };
    return value;
  }

  /** True while attempts to the dependency are paced: its ramp runs, or it has a ceiling. */
  #paces(dependency: string, health: Health): boolean {
    if (this.options.maxRatePerSecond[dependency] !== undefined) return true;
    const { recoveredAtMs } = health.flow;
    if (recoveredAtMs === undefined) return false;
    const storeNow = health.flow.nowMs + (this.#settings.clock.now() - health.readAtMs);
    return storeNow - recoveredAtMs < this.options.slowStartMs;
  }

  #ramp(dependency: string): SlowStartRamp {
    const { slowStartMs, floorPerSecond, maxRatePerSecond } = this.options;
    return { slowStartMs, floorPerSecond, maxRatePerSecond: maxRatePerSecond[dependency] };
  }

  /** The dependency's health, reused for `stateCacheMs`; concurrent readers share one read. */
  async #read(dependency: string): Promise<Health> {
    const now = this.#settings.clock.now();
    const known = this.#health.get(dependency);
    // An open breaker stays open until it half-opens: until then, what was read holds (as the breaker's
    // own cache does).
    if (known && (now - known.readAtMs < this.options.stateCacheMs || (halfOpenInMs(known, now) ?? 0) > 0))
      return known;
    let reading = this.#reading.get(dependency);
    if (!reading) {
      reading = this.#fetch(dependency).finally(() => this.#reading.delete(dependency));
      this.#reading.set(dependency, reading);
    }
    return reading;
  }

  /**
   * Reads the breaker; while it is closed, the flow state too (the recovery time paces the ramp), marking
   * up a dependency marked down (see {@link #mayMarkUp}). While it is not closed, marks the dependency down
   * once and reads nothing more: a held job needs only the breaker.
   */
  async #fetch(dependency: string): Promise<Health> {
    const { store } = this.options;
    const breaker = await this.#settings.breaker.state(dependency);
    let flow: FlowSnapshot;
    if (breaker.state === 'closed') {
      flow = await store.read(dependency);
      if (flow.down && (await this.#mayMarkUp(dependency))) {
        flow = await store.markUp(dependency);
        this.#budgetDown.delete(dependency);
      }
      // Up in the store (whoever marked it): this worker's next denial starts a new episode.
      if (!flow.down) this.#budgetDown.delete(dependency);
      this.#markedDown.delete(dependency);
    } else {
      if (!this.#markedDown.has(dependency)) {
        await store.markDown(dependency);
        this.#markedDown.add(dependency);
      }
      flow = { down: true, nowMs: breaker.nowMs, off: false };
    }
    const health = { breaker, flow, readAtMs: this.#settings.clock.now() };
    this.#health.set(dependency, health);
    return health;
  }

  /**
   * Whether a dependency marked down whose breaker reads closed is up: always when this worker saw its
   * breaker open (a breaker recovery starts the ramp, whatever the budget says); otherwise once its
   * budget's window holds no denial (the mark may be a budget's), or at once without a budget.
   */
  async #mayMarkUp(dependency: string): Promise<boolean> {
    const { budget } = this.#settings;
    if (this.#markedDown.has(dependency) || !budget) return true;
    try {
      return budgetStoppedDenying(await budget.state(dependency));
    } catch (error) {
      // An unreadable budget must not keep a dependency down: starting the ramp is the cautious side.
      this.#settings.internalError(error);
      return true;
    }
  }

  /**
   * The budget denied a retry of `dependency`: marks it down in the store once per episode, so the ramp
   * starts when the budget stops denying ({@link #mayMarkUp}). Only for dependencies this worker gates, whose marks it reads.
   */
  #budgetDenied(dependency: string): void {
    if (!this.options.enabled || this.#stopped || !this.#watched.has(dependency)) return;
    if (this.#budgetDown.has(dependency)) return;
    this.#budgetDown.add(dependency);
    this.#health.delete(dependency);
    Promise.resolve()
      .then(() => this.options.store.markDown(dependency))
      .catch((error: unknown) => {
        this.#budgetDown.delete(dependency);
        this.#settings.internalError(error);
      });
  }
}

const UNPACED: SlowStartRamp = Object.freeze({ slowStartMs: 0, floorPerSecond: 1 });

/** Time left until the open breaker half-opens, on its own clock, less the time since it was read. */
function halfOpenInMs(health: Health, nowMs: number): number | undefined {
  const { halfOpenAtMs, nowMs: breakerNow } = health.breaker;
  if (halfOpenAtMs === undefined) return undefined;
  return Math.max(0, halfOpenAtMs - breakerNow - (nowMs - health.readAtMs));
}
