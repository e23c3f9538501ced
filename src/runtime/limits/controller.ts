import { hostname } from 'node:os';
import type { Clock } from '../../common/clock.js';
import type { RandomSource } from '../../common/random.js';
import { withTimeout } from '../../common/timeout.js';
import { httpStatusOf } from '../../policy/classify/http.js';
import { readRetryAfter } from '../../policy/classify/retry-after.js';
import type { LimitDependencyStatus, LimitEvents, LimitRefusal } from './events.js';
import {
  DEFAULT_LEASE_MS,
  type LimitsByDependency,
  type LimitsOptions,
  type ResolvedDependencyLimit,
  type ResolvedLimitsOptions,
  resolveLimitsOptions,
} from './options.js';
import type { LimitExchange, LimitState, LimitStore } from './store.js';

/**
 * A slot a call holds: give it back with {@link LimitController.release} when the call ends. A slot
 * without a `lease` was not taken from the store (the dependency has no limits, or the store could not
 * be reached): giving it back does nothing.
 *
 * @example
 * const slot: LimitSlot = { dependency: 'openai', lease: 'host-1:4242:1:17', cost: 1 };
 */
export interface LimitSlot {
  readonly dependency: string;
  readonly lease: string | undefined;
  readonly cost: number;
}

/**
 * What asking for a slot came to: a slot, or a hold (waited `maxPaceWaitMs` or knew it would be longer).
 * `retryInMs` is the store's hint of when asking again may succeed (0: unknown, the in-flight cap or a
 * pause without expiry).
 *
 * @example
 * const answer: LimitAnswer = { type: 'held', dependency: 'openai', by: 'in-flight', retryInMs: 0 };
 */
export type LimitAnswer =
  | { type: 'slot'; slot: LimitSlot }
  | { type: 'held'; dependency: string; by: LimitRefusal; retryInMs: number };

/**
 * How a job a limit held is held: `pause` stops the whole queue's consumption for `forMs` (the job is put
 * back unchanged), `delay` reschedules this one job `forMs` from now. Neither uses an attempt.
 *
 * @example
 * const action: LimitHoldAction = { type: 'delay', forMs: 250 };
 */
export interface LimitHoldAction {
  type: 'pause' | 'delay';
  forMs: number;
}

/**
 * What a {@link LimitController} needs besides its options.
 *
 * @example
 * const settings: LimitControllerSettings = { queue: 'index', store, clock: systemClock, random: systemRandom,
 *   emit: () => {}, internalError: console.error, retryAfterMaxMs: 900_000 };
 */
export interface LimitControllerSettings {
  queue: string;
  /** The shared store (a flow store). */
  store: LimitStore;
  clock: Clock;
  random: RandomSource;
  emit: <K extends keyof LimitEvents>(event: K, payload: LimitEvents[K]) => void;
  internalError: (error: unknown) => void;
  /** The longest Retry-After hold (the policy's `retryAfter.maxMs`); past it the dependency is marked down. */
  retryAfterMaxMs: number;
  /** Calls in flight while probing after a hold: the breaker's `halfOpenProbes`. Default 1. */
  probesFor?: ((dependency: string) => number) | undefined;
  /**
   * The dependency every job of the queue needs (flow control's `queueDependency`): a job it holds stops
   * the queue (`pauseQueue`) instead of being delayed. Default none.
   */
  queueDependency?: string | undefined;
  /**
   * A dependency whose held jobs also pause the queue, without its slot being taken before every job
   * starts: the one dependency a `dependencies` mapping names, which job names outside the mapping do not
   * call. Default: `queueDependency`.
   */
  pausingDependency?: string | undefined;
  /** Stops the whole queue's consumption for `forMs` (BullMQ: the worker's rate limit). Default none. */
  pauseQueue?: ((forMs: number) => Promise<void> | void) | undefined;
  /** Marks a dependency down as an open breaker does (a flow store's `markDown`). Default: the store's, if it has one. */
  markDown?: ((dependency: string) => Promise<void> | void) | undefined;
  /** How a wait in the worker is waited. Default: a timer. */
  sleep?: ((ms: number) => Promise<void>) | undefined;
  /** This process's name in the store's declarations and leases. Default `<host>:<pid>:<n>`. */
  holder?: string | undefined;
  /** The longest one exchange with the store may take before the call goes ahead unlimited, in ms. Default 2 000. */
  storeTimeoutMs?: number | undefined;
}

/** One take's answer from a batch. `unenforced`: the store could not be reached, the call goes ahead. */
type TakeAnswer =
  | { granted: true }
  | { granted: false; by: LimitRefusal; waitMs: number }
  | { granted: 'unenforced' };

interface PendingTake {
  lease: string;
  cost: number;
  resolve: (answer: TakeAnswer) => void;
}

/** One dependency's batcher and what this process knows of it. */
interface Lane {
  dependency: string;
  takes: PendingTake[];
  gives: Array<{ lease: string; ok: boolean }>;
  /** The renew timer asked for every held lease to be renewed with the next exchange. */
  renewDue: boolean;
  /** Leases this process holds, with their cost. */
  held: Map<string, number>;
  sending: boolean;
  scheduled: boolean;
  renewTimer: NodeJS.Timeout | undefined;
  /** Calls waiting for a slot the in-flight cap refused: woken by a give-back of this process, or the poll. */
  waiters: Array<() => void>;
  /** When the lane's poll wakes its waiters to ask again (local clock), while one is set. */
  pollAtMs: number | undefined;
  /** Calls of this process waiting in `acquire` for a slot now (any refusal they wait out). */
  waiting: number;
  /**
   * Exchanges in a row in which the in-flight cap refused a take and no slot freed elsewhere was granted:
   * the poll slows with them.
   */
  refusedInARow: number;
  state: LimitState | undefined;
  readAtMs: number | undefined;
  reading: Promise<void> | undefined;
  /** Local time of the last report of a store failure (one report per interval). */
  reportedAtMs: number;
  /** Sends give-backs no exchange took along (see `release`). */
  lingerTimer: NodeJS.Timeout | undefined;
  /**
   * Calls let through while the store could not be reached, with their cost: at most the code's
   * `maxInFlight` of them run at once in this process (see `acquire`).
   */
  unenforced: Map<string, number>;
  unenforcedCost: number;
}

/** The shortest hold of a job; a wait hint below it holds this long (no busy loop). */
const MIN_HOLD_MS = 50;
/** The longest a held job is delayed before it looks again (a lifted pause or a reset reaches it soon). */
const MAX_HOLD_MS = 5_000;
/** A held job's delay when the store gives no hint (the in-flight cap). */
const IN_FLIGHT_HOLD_MS = 250;
/** A held job's delay while a pause without expiry holds its dependency. */
const PAUSED_HOLD_MS = 1_000;
/**
 * How long a give-back waits for an exchange to ride with before it goes alone: short next to a call, and
 * a slot's holder elsewhere waits at most this much longer for it (calls of this process: not at all).
 */
const GIVE_LINGER_MS = 20;
/**
 * How often a call refused by the in-flight cap asks again when no give-back of this process wakes it, at
 * first; each exchange in a row that grants nothing doubles it, up to {@link MAX_IN_FLIGHT_POLL_MS}.
 */
const IN_FLIGHT_POLL_MS = 50;
/** The slowest poll: a fleet pinned at its cap costs each worker at most a few exchanges a second. */
const MAX_IN_FLIGHT_POLL_MS = 400;
/** Store failures are reported at most once per interval and dependency. */
const REPORT_EVERY_MS = 5_000;
const FREE = Object.freeze({ lease: undefined, cost: 0 });
let controllers = 0;

/**
 * One worker's fleet-wide limits, knowing no queue library (docs/limits.md): a slot taken from the store
 * before each call to a limited dependency and given back after it, waits of at most `maxPaceWaitMs` in
 * the worker (`maxStartWaitMs` for a job of the queue's own dependency at the in-flight cap before it
 * starts), holds (pause or delay) past them, and Retry-After holds recorded for the fleet.
 *
 * Round trips are shared: per dependency, every take, give-back and renewal this controller's callers ask
 * for in one turn of the event loop goes to the store as one `exchangeLimits` (while one is on its way, the
 * next batch forms and follows it), so the success path costs at most one round trip per call, and far
 * less under concurrency. Each exchange also refreshes this process's declaration of its code's limits.
 * Leases of running calls are renewed every `leaseMs / 3` by one timer per dependency. What the store
 * answered about a dependency is reused for `stateCacheMs` to tell whether a dependency this worker has no
 * code limits for is limited now (an operator's override, a hold), so such a dependency costs one state
 * read per `stateCacheMs`, not one per call.
 *
 * A store that cannot be reached does not stop work: the call goes ahead without a slot, and the failure
 * is reported (at most once per 5 s and dependency). The kill switch of flow control does not lift limits.
 *
 * @example
 * const limits = new LimitController({ openai: { maxInFlight: 25 } }, { store }, settings);
 * const answer = await limits.acquire('openai', 1);
 * if (answer.type === 'slot') try { await complete() } finally { limits.release(answer.slot, true) }
 */
export class LimitController {
  readonly options: ResolvedLimitsOptions;
  /** This process's name in the store's declarations and leases. */
  readonly holder: string;
  readonly #settings: LimitControllerSettings;
  readonly #store: LimitStore;
  readonly #lanes = new Map<string, Lane>();
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #timeoutMs: number;
  readonly #exchanges = new Set<Promise<void>>();
  #leases = 0;
  #pausedUntil = 0;
  #stopped = false;
  /** Set by {@link holdWaits}: while true, a call refused a slot is held at once, not waited for. */
  #noWaits = false;

  constructor(
    limits: LimitsByDependency | undefined,
    options: LimitsOptions | undefined,
    settings: LimitControllerSettings,
  ) {
    this.options = resolveLimitsOptions(limits, options);
    this.#settings = settings;
    this.#store = settings.store;
    this.holder = settings.holder ?? `${hostname()}:${process.pid}:${++controllers}`;
    this.#timeoutMs = settings.storeTimeoutMs ?? 2_000;
    this.#sleep =
      settings.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, Math.ceil(ms)).unref()));
  }

  /** The queue these limits serve. */
  get queue(): string {
    return this.#settings.queue;
  }

  /** The dependency every job of the queue needs: a job it holds pauses the queue. */
  get queueDependency(): string | undefined {
    return this.#settings.queueDependency;
  }

  /** Dependencies this worker's code limits, sorted. */
  dependencies(): string[] {
    return [...this.options.limits.keys()].sort();
  }

  /**
   * True when calls to `dependency` take slots, as far as this worker knows now without asking the store:
   * its code limits it, or the state last read says something is in force (another worker's declared
   * limit, an operator's override, a hold, probing after one).
   */
  isLimited(dependency: string): boolean {
    if (this.options.limits.has(dependency)) return true;
    return inForce(this.#lanes.get(dependency)?.state);
  }

  /**
   * Takes a slot of `cost` units for a call to `dependency`, waiting in the worker up to `maxPaceWaitMs`
   * (the rate pacer's next slot, the end of a short hold, or an in-flight slot that a give-back of this
   * process or a short poll finds); past it, or when the wait is known to be longer, the answer is
   * `held`. `how.beforeStart`: the slot of a job that has not started yet; for the queue's own (pausing)
   * dependency the in-flight cap is then waited for up to `maxStartWaitMs`. While {@link holdWaits} is on,
   * a refusal is `held` at once. A dependency with no limit in force gets a slot without a lease at once.
   */
  async acquire(dependency: string, cost = 1, how: { beforeStart?: boolean } = {}): Promise<LimitAnswer> {
    const free = (): LimitAnswer => ({ type: 'slot', slot: { dependency, ...FREE } });
    if (!(await this.#limitedNow(dependency))) return free();
    const lane = this.#lane(dependency);
    const { clock } = this.#settings;
    const startedAt = clock.now();
    const deadline = startedAt + this.options.maxPaceWaitMs;
    // A job of the queue's own dependency waits longer for an in-flight slot before it starts: it blocks
    // no other job (every job of the queue needs the same dependency), and held it would be put back and
    // fetched again, round after round, while the fleet stays at its cap.
    const startDeadline =
      how.beforeStart === true && dependency === this.#pausingDependency
        ? startedAt + Math.max(this.options.maxPaceWaitMs, this.options.maxStartWaitMs)
        : deadline;
    let firstBy: LimitRefusal | undefined;
    let waiting = false;
    try {
      for (;;) {
        const lease = `${this.holder}:${++this.#leases}`;
        let answer = await this.#take(lane, lease, cost);
        if (answer.granted === 'unenforced') {
          const local = this.#unenforced(lane, lease, cost);
          if (local === undefined) return free();
          if (local.type === 'slot') return local;
          answer = local.answer;
        }
        if (answer.granted) {
          if (firstBy !== undefined) this.#waited(dependency, firstBy, startedAt, 'granted');
          return { type: 'slot', slot: { dependency, lease, cost } };
        }
        firstBy ??= answer.by;
        const until = answer.by === 'in-flight' ? startDeadline : deadline;
        const waitMs = this.#noWaits ? undefined : this.#waitFor(lane, answer, until - clock.now());
        if (waitMs === undefined) {
          this.#waited(dependency, firstBy, startedAt, 'held');
          return { type: 'held', dependency, by: answer.by, retryInMs: Math.max(0, answer.waitMs) };
        }
        if (!waiting) {
          waiting = true;
          lane.waiting++;
        }
        await this.#wait(lane, waitMs, answer.by === 'in-flight' ? until : undefined);
      }
    } finally {
      if (waiting) lane.waiting--;
    }
  }

  /**
   * Gives a slot back (its call ended; `ok`: it succeeded, which ends probing after a hold); the caller
   * does not wait. Calls of this process waiting for an in-flight slot ask again in the same exchange,
   * sent at once. With none waiting, the give-back rides with the dependency's next exchange (the next
   * call's take, most often), or goes alone {@link GIVE_LINGER_MS} later: so a worker running one job at a
   * time pays one round trip per call, not two.
   */
  release(slot: LimitSlot, ok: boolean): void {
    if (slot.lease === undefined) return;
    const lane = this.#lanes.get(slot.dependency);
    const unenforced = lane?.unenforced.get(slot.lease);
    if (lane && unenforced !== undefined) {
      lane.unenforced.delete(slot.lease);
      lane.unenforcedCost -= unenforced;
      for (const wake of lane.waiters.splice(0)) wake();
      return;
    }
    if (!lane?.held.delete(slot.lease)) return;
    lane.gives.push({ lease: slot.lease, ok });
    if (lane.waiters.length > 0 || this.#stopped) {
      for (const wake of lane.waiters.splice(0)) wake();
      this.#schedule(lane);
      return;
    }
    lane.lingerTimer ??= setTimeout(() => {
      lane.lingerTimer = undefined;
      this.#schedule(lane);
    }, GIVE_LINGER_MS);
  }

  /**
   * How to hold a job a limit held: the queue's own dependency pauses the queue (`pauseQueue`, at most
   * once per pause), any other delays the job. `forMs` is the store's hint, at least 50 ms and at most 5 s,
   * plus up to 20 % jitter, so held jobs do not come back as a herd and a lifted pause reaches them soon.
   */
  holdAction(held: Extract<LimitAnswer, { type: 'held' }>): LimitHoldAction {
    const { random, clock } = this.#settings;
    const hint =
      held.retryInMs > 0 ? held.retryInMs : held.by === 'paused' ? PAUSED_HOLD_MS : IN_FLIGHT_HOLD_MS;
    const base = Math.min(MAX_HOLD_MS, Math.max(MIN_HOLD_MS, hint));
    const forMs = Math.round(base * (1 + 0.2 * random()));
    if (held.dependency !== this.#pausingDependency) return { type: 'delay', forMs };
    const until = clock.now() + forMs;
    if (until > this.#pausedUntil + MIN_HOLD_MS) {
      this.#pausedUntil = until;
      Promise.resolve()
        .then(() => this.#settings.pauseQueue?.(forMs))
        .catch((error: unknown) => this.#settings.internalError(error));
    }
    return { type: 'pause', forMs };
  }

  /**
   * A call to `dependency` failed with `error`. When the dependency is limited and the error is a 429 or
   * 503 carrying Retry-After (seconds or an HTTP-date), holds the dependency fleet-wide for
   * min(Retry-After, `retryAfterMaxMs`) and tells it (`limit-hold`); past the cap the dependency is also
   * marked down, as an open breaker marks it. Returns whether a hold was recorded. Never throws: a store
   * that refuses is reported.
   */
  async noteFailure(dependency: string, error: unknown): Promise<boolean> {
    if (!this.isLimited(dependency)) return false;
    const asked = retryAfterOf(error, this.#settings.clock.now());
    if (asked === undefined || asked <= 0) return false;
    const maxMs = this.#settings.retryAfterMaxMs;
    const capped = asked > maxMs;
    const forMs = Math.min(asked, maxMs);
    try {
      const state = await this.#store.holdLimits(dependency, forMs, 'retry-after');
      this.#note(this.#lane(dependency), state);
      this.#settings.emit('limit-hold', {
        queue: this.#settings.queue,
        dependency,
        forMs,
        reason: 'retry-after',
        capped,
      });
      if (capped) await this.#markDown(dependency);
      return true;
    } catch (storeError) {
      this.#settings.internalError(storeError);
      return false;
    }
  }

  /** Per dependency this worker limits or has met limits for: its slots in flight here, and the last state read. */
  status(): LimitDependencyStatus[] {
    const names = new Set(this.options.limits.keys());
    for (const [dependency, lane] of this.#lanes)
      if (lane.held.size > 0 || lane.waiting > 0 || inForce(lane.state)) names.add(dependency);
    return [...names].sort().map((dependency) => {
      const lane = this.#lanes.get(dependency);
      let inFlight = 0;
      for (const cost of lane?.held.values() ?? []) inFlight += cost;
      const status: LimitDependencyStatus = { dependency, inFlight, waiting: lane?.waiting ?? 0 };
      if (lane?.state) {
        status.state = lane.state;
        status.readAtMs = lane.readAtMs;
      }
      return status;
    });
  }

  /**
   * Turns waits in the worker off (`on`, the default) or back on. Off, the calls waiting for a slot now
   * and any refused later are held at once. The worker turns them off when it pauses or closes, so a job
   * waiting to start keeps neither waiting (it goes back unrun), and on again when it resumes.
   *
   * @example
   * limits.holdWaits(); // pausing: every job waiting for a slot is held now
   * limits.holdWaits(false); // resumed
   */
  holdWaits(on = true): void {
    this.#noWaits = on;
    if (on) for (const lane of this.#lanes.values()) for (const wake of lane.waiters.splice(0)) wake();
  }

  /** The dependency whose held jobs pause the queue (see `LimitControllerSettings.pausingDependency`). */
  get #pausingDependency(): string | undefined {
    return this.#settings.pausingDependency ?? this.#settings.queueDependency;
  }

  /**
   * Stops the renew timers and sends what is waiting (give-backs of calls that ended), then waits for the
   * exchanges on their way. Call it once the worker's jobs have ended: slots still held are not renewed
   * any more and lapse within their lease.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const lane of this.#lanes.values()) {
      clearInterval(lane.renewTimer);
      clearTimeout(lane.lingerTimer);
      lane.renewTimer = undefined;
      lane.lingerTimer = undefined;
      lane.renewDue = false;
    }
    for (;;) {
      for (const lane of this.#lanes.values())
        if (!lane.sending && (lane.gives.length > 0 || lane.takes.length > 0)) this.#send(lane);
      if (this.#exchanges.size === 0) return;
      await Promise.all([...this.#exchanges]);
    }
  }

  /** True when calls to `dependency` take slots now: code limits, or a state (reused `stateCacheMs`) that says so. */
  async #limitedNow(dependency: string): Promise<boolean> {
    if (this.options.limits.has(dependency)) return true;
    const lane = this.#lane(dependency);
    const now = this.#settings.clock.now();
    if (lane.readAtMs === undefined || now - lane.readAtMs >= this.options.stateCacheMs) {
      lane.reading ??= this.#read(lane).finally(() => {
        lane.reading = undefined;
      });
      await lane.reading;
    }
    return inForce(lane.state);
  }

  async #read(lane: Lane): Promise<void> {
    try {
      this.#note(lane, await withTimeout(this.#store.limitState(lane.dependency), this.#timeoutMs, STORE));
    } catch (error) {
      // Unreadable: no limit is known; asked again after stateCacheMs, not at every call.
      lane.readAtMs = this.#settings.clock.now();
      this.#reportStore(lane, error);
    }
  }

  #note(lane: Lane, state: LimitState): void {
    lane.state = state;
    lane.readAtMs = this.#settings.clock.now();
  }

  #waited(dependency: string, by: LimitRefusal, startedAt: number, outcome: 'granted' | 'held'): void {
    this.#settings.emit('limit-wait', {
      queue: this.#settings.queue,
      dependency,
      by,
      waitedMs: Math.max(0, this.#settings.clock.now() - startedAt),
      outcome,
    });
  }

  /**
   * How long to wait before asking again, within `remainingMs`; `undefined` to stop waiting. The in-flight
   * cap gives no hint: a short poll, cut short by a give-back here. The pacer, a hold and a pause with an
   * expiry name when: waited for (with a little jitter, so waiters do not ask as a herd) when it comes in
   * time. A pause without expiry is not waited for.
   */
  #waitFor(
    lane: Lane,
    answer: { by: LimitRefusal; waitMs: number },
    remainingMs: number,
  ): number | undefined {
    if (remainingMs <= 0) return undefined;
    const jitter = this.#settings.random();
    if (answer.by === 'in-flight') {
      const pollMs = Math.min(
        MAX_IN_FLIGHT_POLL_MS,
        IN_FLIGHT_POLL_MS * 2 ** Math.min(Math.max(0, lane.refusedInARow - 1), 3),
      );
      return Math.min(remainingMs, pollMs * (1 + jitter));
    }
    if (answer.by === 'paused' && answer.waitMs <= 0) return undefined;
    if (answer.waitMs > remainingMs) return undefined;
    return Math.min(remainingMs, answer.waitMs + Math.min(10, answer.waitMs / 10) * jitter + 1);
  }

  /**
   * Waits `ms`. A call the in-flight cap refused (`deadline`: when it stops waiting) is also woken by a
   * give-back of this process, and joins the lane's poll when that comes before its deadline.
   */
  #wait(lane: Lane, ms: number, deadline: number | undefined): Promise<void> {
    if (deadline === undefined) return this.#sleep(ms);
    return new Promise<void>((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        const at = lane.waiters.indexOf(finish);
        if (at >= 0) lane.waiters.splice(at, 1);
        resolve();
      };
      lane.waiters.push(finish);
      // One poll per dependency in a process: every call the cap keeps waiting asks again at the lane's
      // poll, all in one exchange, rather than each on a timer of its own (hundreds of waiting calls
      // would otherwise send an exchange every few milliseconds). A call whose deadline comes first
      // keeps a timer for it.
      const at = this.#settings.clock.now() + ms;
      if (lane.pollAtMs !== undefined && lane.pollAtMs <= deadline) return;
      if (lane.pollAtMs === undefined && ms >= IN_FLIGHT_POLL_MS) {
        lane.pollAtMs = at;
        void this.#sleep(ms).then(() => {
          lane.pollAtMs = undefined;
          for (const wake of lane.waiters.splice(0)) wake();
        });
        return;
      }
      void this.#sleep(ms).then(finish);
    });
  }

  #take(lane: Lane, lease: string, cost: number): Promise<TakeAnswer> {
    return new Promise<TakeAnswer>((resolve) => {
      lane.takes.push({ lease, cost, resolve });
      this.#schedule(lane);
    });
  }

  #lane(dependency: string): Lane {
    let lane = this.#lanes.get(dependency);
    if (!lane) {
      lane = {
        dependency,
        takes: [],
        gives: [],
        renewDue: false,
        held: new Map(),
        sending: false,
        scheduled: false,
        renewTimer: undefined,
        waiters: [],
        pollAtMs: undefined,
        waiting: 0,
        refusedInARow: 0,
        state: undefined,
        readAtMs: undefined,
        reading: undefined,
        reportedAtMs: Number.NEGATIVE_INFINITY,
        lingerTimer: undefined,
        unenforced: new Map(),
        unenforcedCost: 0,
      };
      this.#lanes.set(dependency, lane);
    }
    return lane;
  }

  /**
   * Sends the lane's batch after this turn of the event loop (so every caller of this turn joins it), or
   * after the exchange on its way.
   */
  #schedule(lane: Lane): void {
    if (lane.scheduled || lane.sending) return;
    lane.scheduled = true;
    setImmediate(() => {
      lane.scheduled = false;
      if (!lane.sending) this.#send(lane);
    });
  }

  /** One exchange: declare, give back, renew, take, in that order; then the next batch if one formed. */
  #send(lane: Lane): void {
    clearTimeout(lane.lingerTimer);
    lane.lingerTimer = undefined;
    const takes = lane.takes.splice(0);
    const give = lane.gives.splice(0);
    const renew = lane.renewDue ? [...lane.held.keys()] : [];
    lane.renewDue = false;
    if (takes.length === 0 && give.length === 0 && renew.length === 0) return;
    const { dependency } = lane;
    const config = this.#configOf(dependency);
    const request: LimitExchange = {
      holder: this.holder,
      declared: config.limit,
      leaseMs: config.leaseMs,
      give,
      renew,
      take: takes.map(({ lease, cost }) => ({ lease, cost })),
      probes: this.#probes(dependency),
      ramp: { slowStartMs: this.options.slowStartMs, floorPerSecond: this.options.floorPerSecond },
    };
    lane.sending = true;
    const exchange = (async () => {
      try {
        const result = await withTimeout(
          this.#store.exchangeLimits(dependency, request),
          this.#timeoutMs,
          STORE,
        );
        this.#note(lane, result.state);
        const by = result.refusedBy ?? 'in-flight';
        // The poll slows while it finds no slot freed elsewhere: slots this exchange gave back and took
        // again (a call of this process handing its slot to a waiting one) say nothing of the others.
        if (result.granted > give.length) lane.refusedInARow = 0;
        else if (result.granted < takes.length && by === 'in-flight') lane.refusedInARow++;
        takes.forEach((take, i) => {
          if (i < result.granted) {
            lane.held.set(take.lease, take.cost);
            take.resolve({ granted: true });
          } else take.resolve({ granted: false, by, waitMs: result.waitMs });
        });
        if (lane.held.size > 0) this.#renewing(lane, config.leaseMs);
      } catch (error) {
        this.#reportStore(lane, error);
        for (const take of takes) take.resolve({ granted: 'unenforced' });
      } finally {
        lane.sending = false;
        if (lane.takes.length > 0 || lane.gives.length > 0 || lane.renewDue) this.#schedule(lane);
      }
    })();
    this.#exchanges.add(exchange);
    void exchange.finally(() => this.#exchanges.delete(exchange));
  }

  /**
   * A call the store could not answer for: it goes ahead (a store outage does not stop the work), but no
   * more than the code's `maxInFlight` such calls run at once in this process, so one process alone never
   * exceeds the fleet's cap. `undefined`: no local cap applies (no `maxInFlight` in code); else the local
   * slot, or a refusal to wait on as on the in-flight cap.
   */
  #unenforced(
    lane: Lane,
    lease: string,
    cost: number,
  ): { type: 'slot'; slot: LimitSlot } | { type: 'refused'; answer: TakeAnswer } | undefined {
    const max = this.#configOf(lane.dependency).limit.maxInFlight;
    if (max === undefined) return undefined;
    if (lane.unenforcedCost > 0 && lane.unenforcedCost + cost > max)
      return { type: 'refused', answer: { granted: false, by: 'in-flight', waitMs: 0 } };
    lane.unenforced.set(lease, cost);
    lane.unenforcedCost += cost;
    return { type: 'slot', slot: { dependency: lane.dependency, lease, cost } };
  }

  /** One renew timer per dependency while this process holds its leases: every `leaseMs / 3`. */
  #renewing(lane: Lane, leaseMs: number): void {
    if (lane.renewTimer || this.#stopped) return;
    lane.renewTimer = setInterval(
      () => {
        if (lane.held.size === 0) {
          clearInterval(lane.renewTimer);
          lane.renewTimer = undefined;
          return;
        }
        lane.renewDue = true;
        this.#schedule(lane);
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    lane.renewTimer.unref();
  }

  #configOf(dependency: string): ResolvedDependencyLimit {
    return this.options.limits.get(dependency) ?? NO_LIMIT;
  }

  #probes(dependency: string): number {
    try {
      const probes = this.#settings.probesFor?.(dependency) ?? 1;
      return Number.isSafeInteger(probes) && probes >= 1 ? probes : 1;
    } catch {
      return 1;
    }
  }

  async #markDown(dependency: string): Promise<void> {
    const store = this.#store as LimitStore & { markDown?: (dependency: string) => unknown };
    const markDown =
      this.#settings.markDown ??
      (typeof store.markDown === 'function' ? store.markDown.bind(store) : undefined);
    try {
      await markDown?.(dependency);
    } catch (error) {
      this.#settings.internalError(error);
    }
  }

  #reportStore(lane: Lane, error: unknown): void {
    const now = this.#settings.clock.now();
    if (now - lane.reportedAtMs < REPORT_EVERY_MS) return;
    lane.reportedAtMs = now;
    this.#settings.internalError(error);
  }
}

const STORE = 'limits store';
const NO_LIMIT: ResolvedDependencyLimit = Object.freeze({
  limit: Object.freeze({}),
  leaseMs: DEFAULT_LEASE_MS,
});

/** True when a state says calls take slots: a limit in force, a pause, a hold, or probing after one. */
function inForce(state: LimitState | undefined): boolean {
  if (!state) return false;
  const { effective } = state;
  return (
    effective.maxInFlight !== undefined ||
    effective.maxRatePerSecond !== undefined ||
    state.override?.paused === true ||
    (state.hold !== undefined && state.hold.untilMs > state.nowMs) ||
    state.probing
  );
}

/**
 * The Retry-After of a 429 or 503 answer behind `error` (the error itself or a `cause` it wraps), in ms;
 * `undefined` for anything else.
 */
function retryAfterOf(error: unknown, nowMs: number): number | undefined {
  let current = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const status = httpStatusOf(current);
    if (status === 429 || status === 503) return readRetryAfter(current, nowMs);
    if (status !== undefined) return undefined;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
