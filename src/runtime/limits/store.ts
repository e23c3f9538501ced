import type { MaybePromise } from '../contracts.js';

/**
 * The limits one dependency has, from code (`createWorker(…, { limits })`) or from an operator's override.
 * Each field unset: no such limit.
 *
 * @example
 * const limit: DependencyLimit = { maxInFlight: 25, maxRatePerSecond: 50 };
 */
export interface DependencyLimit {
  /** Calls in flight at once, fleet-wide, counted in cost units (a call weighs its `cost`, default 1). */
  maxInFlight?: number | undefined;
  /** Cost units started per second, fleet-wide (a GCRA pacer: no burst beyond one interval). */
  maxRatePerSecond?: number | undefined;
}

/**
 * An operator's override of a dependency's limits, kept in the flow store until it expires or is reset.
 * It wins over every worker's code while it lives.
 *
 * @example
 * const override: LimitOverride = { maxInFlight: 10, reason: 'vendor incident', by: 'ops@host', setAtMs: 1_700_000_000_000 };
 */
export interface LimitOverride extends DependencyLimit {
  /** True: no call to the dependency starts anywhere until resumed (or the override expires). */
  paused?: boolean | undefined;
  /** Why, as the operator gave it (required by the CLI and the console). */
  reason: string;
  /** Who set it (the audit actor). */
  by: string;
  /** When it was set, store time. */
  setAtMs: number;
  /** When it lapses by itself, store time. Unset: until reset. */
  expiresAtMs?: number | undefined;
}

/**
 * A fleet-wide hold on a dependency: no call starts until `untilMs` (store time); then up to `probes`
 * calls may be in flight until one succeeds, which starts the slow-start ramp.
 *
 * @example
 * const hold: LimitHold = { untilMs: 1_700_000_060_000, reason: 'retry-after', setAtMs: 1_700_000_000_000 };
 */
export interface LimitHold {
  untilMs: number;
  /** `retry-after`: a 429/503 answer asked for it. */
  reason: 'retry-after';
  setAtMs: number;
}

/**
 * A dependency's limits as the fleet shares them, at the store's time: what `stormguard limits status`, the
 * console and the gauges show.
 *
 * @example
 * const state: LimitState = { dependency: 'openai', nowMs: 1_700_000_000_000, inFlight: 24,
 *   declared: { maxInFlight: 25 }, effective: { maxInFlight: 25 }, probing: false };
 */
export interface LimitState {
  dependency: string;
  /** The store's clock when it answered. */
  nowMs: number;
  /** Cost units held by live leases (expired leases do not count). */
  inFlight: number;
  /**
   * The lowest value each field has among live declarations from workers' code (each
   * {@link LimitExchange}'s `declared`, living `leaseMs` past its holder's last exchange).
   */
  declared: DependencyLimit;
  /** What is enforced now: the override's fields where it sets them, else `declared`. */
  effective: DependencyLimit;
  /** A live operator override, if any. */
  override?: LimitOverride | undefined;
  /** A live Retry-After hold, if any (`untilMs` still ahead). */
  hold?: LimitHold | undefined;
  /**
   * True after a hold ended and no call has succeeded since: at most `probes` units may be in flight
   * (the request's `probes`).
   */
  probing: boolean;
  /** When the dependency last came out of a hold (its first success after one): its ramp runs from then. */
  recoveredAtMs?: number | undefined;
}

/**
 * One process's exchange with the store for one dependency, made in one round trip: declare its code's
 * limits, give back leases that ended (with whether their call succeeded), renew leases still running,
 * then try to take new ones, in order.
 *
 * @example
 * const request: LimitExchange = { holder: 'host-1:4242', declared: { maxInFlight: 25 }, leaseMs: 30_000,
 *   take: [{ lease: 'host-1:4242:17', cost: 1 }], give: [], renew: [], probes: 1,
 *   ramp: { slowStartMs: 30_000, floorPerSecond: 1 } };
 */
export interface LimitExchange {
  /** Who declares (a process): its declaration lives `leaseMs` past its last exchange. */
  holder: string;
  /** This holder's code limits for the dependency. */
  declared: DependencyLimit;
  /** How long a lease taken or renewed now lives unless renewed again. */
  leaseMs: number;
  /**
   * Leases to give back (their calls ended): `ok` true when the call succeeded (once the hold has ended,
   * it ends probing). Unknown leases are ignored, but their `ok` still counts.
   */
  give: ReadonlyArray<{ lease: string; ok: boolean }>;
  /** Leases whose calls still run: their expiry moves to now + `leaseMs`. Unknown leases are ignored. */
  renew: readonly string[];
  /**
   * Leases to take, in order: each is granted when the dependency is not paused or held, its cost fits
   * under the effective `maxInFlight` (or `probes` while probing, whichever is lower), and the rate
   * pacer's next slot is now (a lease of cost n takes n slots). A call heavier than the whole cap is
   * granted when nothing is in flight: it runs alone rather than never. A refusal refuses every later
   * request of the same exchange too (order is kept). Taking a lease id already held replaces it.
   */
  take: ReadonlyArray<{ lease: string; cost: number }>;
  /** Units allowed in flight while probing after a hold (the breaker's `halfOpenProbes`). */
  probes: number;
  /** The ramp after a hold's first success: the rate starts at the floor and doubles to the limit. */
  ramp: { slowStartMs: number; floorPerSecond: number };
}

/**
 * What an exchange came to.
 *
 * @example
 * const result: LimitExchangeResult = { granted: 1, waitMs: 0, state };
 */
export interface LimitExchangeResult {
  /** How many of `take` were granted, from the first. */
  granted: number;
  /**
   * When some were refused: how long until asking again may succeed. A hold or pause: until it ends (a
   * pause without expiry: 0, and the caller asks again at its own poll interval); the rate: until the
   * pacer's next slot; the in-flight cap: 0 (unknown: it frees when a lease is given back or expires).
   * 0 when all were granted.
   */
  waitMs: number;
  /** Why the first refused request was refused. */
  refusedBy?: 'paused' | 'hold' | 'in-flight' | 'rate' | undefined;
  /** The dependency's state after the exchange. */
  state: LimitState;
}

/**
 * The limits part of the flow store: leased in-flight slots, the rate pacer, Retry-After holds and
 * operator overrides of each dependency, shared by the fleet. Every operation is atomic, takes time from
 * the store, and (Redis) touches only the dependency's hash slot. Each flow store implements it and passes
 * the limits cases of `store.case.ts`. A request no store can keep (a lease of 0 ms, a cost that is not a
 * whole number >= 1, an override without a reason: see `limit-maths.ts`) rejects with a ValidationError.
 *
 * @example
 * const store: LimitStore = new MemoryFlowStore({ clock });
 * await store.exchangeLimits('openai', request);
 */
export interface LimitStore {
  /** One process's batched exchange for a dependency (see {@link LimitExchange}). */
  exchangeLimits(dependency: string, request: LimitExchange): MaybePromise<LimitExchangeResult>;
  /**
   * Holds the dependency fleet-wide for `forMs` from now (store time); a longer hold already set wins.
   * Probing starts when the hold ends.
   */
  holdLimits(dependency: string, forMs: number, reason: LimitHold['reason']): MaybePromise<LimitState>;
  /**
   * Sets (replacing) or, with `undefined`, removes the operator's override; `expiresInMs` from now.
   * `clearHold`: the hold, probing and the ramp after it go too. Reset is
   * `overrideLimits(dependency, undefined, { clearHold: true })`. Declarations and leases stay.
   */
  overrideLimits(
    dependency: string,
    override:
      | (Omit<LimitOverride, 'setAtMs' | 'expiresAtMs'> & { expiresInMs?: number | undefined })
      | undefined,
    options?: { clearHold?: boolean },
  ): MaybePromise<LimitState>;
  /** The dependency's limits state. Never writes (expired leases and overrides are left out, not removed). */
  limitState(dependency: string): MaybePromise<LimitState>;
  /** Dependencies with a live declaration, override, hold or lease, sorted. */
  limitedDependencies(): MaybePromise<string[]>;
}
