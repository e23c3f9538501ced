import { PermanentError } from '../../errors/permanent-error.js';
import { TransientError } from '../../errors/transient-error.js';
import type { DependencySpec } from '../scenario/schema.js';

/** A dependency's state at some moment. */
export type DependencyState = 'up' | 'down' | 'degraded';

/** The outcome of one simulated call; also the index of its error in `DependencyModel.errors`. */
export const CallOutcome = {
  Success: 0,
  /** A transient failure while the dependency is up (background noise). */
  Flaky: 1,
  Down: 2,
  Degraded: 3,
  Permanent: 4,
  /** A 429 with Retry-After: the call came above the dependency's `rateLimit`. */
  RateLimited: 5,
} as const;
export type CallOutcome = (typeof CallOutcome)[keyof typeof CallOutcome];

/** A period during which a dependency was not up: what "while it was down" means in the results. */
export interface UnhealthyPeriod {
  fromMs: number;
  untilMs: number;
  state: 'down' | 'degraded';
}

const DEFAULT_ERROR_RATE: Record<DependencyState, number | undefined> = {
  up: undefined,
  down: 1,
  degraded: 0.5,
};

/**
 * How one dependency answers over time: up, down or degraded, each with an error rate and a mean latency.
 * `call(t)` draws one call's outcome and latency from the phase in force at `t`.
 *
 * Calls must come in non-decreasing time order (the engine's clock only moves forward), which lets the
 * current phase be found with a cursor instead of a search. Failure errors are built once and reused:
 * `decide` only reads them.
 */
export class DependencyModel {
  readonly #from: number[] = [];
  readonly #until: number[] = [];
  readonly #errorRate: number[] = [];
  readonly #latency: number[] = [];
  readonly #state: DependencyState[] = [];
  readonly #baseErrorRate: number;
  readonly #baseLatency: number;
  /** The calls answered per second under `rateLimit` (0: no rate limit). */
  readonly #perSecond: number;
  /** The second of the clock whose calls `#answered` counts, and how many it answered (not 429). */
  #second = -1;
  #answered = 0;
  #cursor = 0;

  /** The error each failing outcome raises, indexed by {@link CallOutcome}. */
  readonly errors: readonly Error[];
  /** The periods it was down or degraded, in time order. */
  readonly unhealthy: readonly UnhealthyPeriod[];
  /** The Retry-After its 429s carry, in ms (1 s without a `rateLimit`). */
  readonly retryAfterMs: number;
  /** Written by `call`: the last call's latency in ms (kept in a field so a call allocates nothing). */
  latencyMs = 0;

  constructor(
    readonly name: string,
    spec: DependencySpec,
  ) {
    this.#baseErrorRate = spec.errorRate;
    this.#baseLatency = spec.latency;
    this.#perSecond = spec.rateLimit?.perSecond ?? 0;
    this.retryAfterMs = (spec.rateLimit?.retryAfterSeconds ?? 1) * 1_000;
    const phases = [...spec.timeline].sort((a, b) => a.from - b.from);
    const unhealthy: UnhealthyPeriod[] = [];
    for (const phase of phases) {
      this.#from.push(phase.from);
      this.#until.push(phase.until);
      this.#errorRate.push(phase.errorRate ?? DEFAULT_ERROR_RATE[phase.state] ?? spec.errorRate);
      this.#latency.push(phase.latency ?? spec.latency);
      this.#state.push(phase.state);
      if (phase.state !== 'up')
        unhealthy.push({ fromMs: phase.from, untilMs: phase.until, state: phase.state });
    }
    this.unhealthy = unhealthy;
    this.errors = [
      new Error('not a failure'),
      new TransientError(`${name}: connection reset`),
      new TransientError(`${name} is unavailable (503)`),
      new TransientError(`${name} timed out`),
      new PermanentError(`${name} rejected the request as malformed (400)`),
      rateLimitedError(name, spec.rateLimit?.retryAfterSeconds ?? 1),
    ];
  }

  /**
   * Draws one call made at `t`: returns its outcome and sets `latencyMs`. `permanentRate` is the job
   * class's share of requests that fail permanently whatever the dependency's state. Under a `rateLimit`,
   * a call beyond `perSecond` in its second of the clock is answered 429 (with the phase's latency) and
   * draws nothing more.
   */
  call(t: number, random: () => number, permanentRate: number): CallOutcome {
    const phase = this.#phaseAt(t);
    const mean = phase < 0 ? this.#baseLatency : (this.#latency[phase] as number);
    this.latencyMs = mean * (0.5 + random());
    if (this.#perSecond > 0 && this.#overRate(t)) return CallOutcome.RateLimited;
    const errorRate = phase < 0 ? this.#baseErrorRate : (this.#errorRate[phase] as number);
    if (errorRate > 0 && random() < errorRate) {
      const state = phase < 0 ? 'up' : this.#state[phase];
      return state === 'down'
        ? CallOutcome.Down
        : state === 'degraded'
          ? CallOutcome.Degraded
          : CallOutcome.Flaky;
    }
    if (permanentRate > 0 && random() < permanentRate) return CallOutcome.Permanent;
    return CallOutcome.Success;
  }

  /** The state in force at `t` (for reports; any order). */
  stateAt(t: number): DependencyState {
    for (let i = 0; i < this.#from.length; i++)
      if (t >= (this.#from[i] as number) && t < (this.#until[i] as number))
        return this.#state[i] as DependencyState;
    return 'up';
  }

  /** True when the call at `t` is beyond the rate: its second has answered `perSecond` calls already. */
  #overRate(t: number): boolean {
    const second = Math.floor(t / 1_000);
    if (second !== this.#second) {
      this.#second = second;
      this.#answered = 0;
    }
    if (this.#answered >= this.#perSecond) return true;
    this.#answered++;
    return false;
  }

  #phaseAt(t: number): number {
    const until = this.#until;
    while (this.#cursor < until.length && t >= (until[this.#cursor] as number)) this.#cursor++;
    return this.#cursor < until.length && t >= (this.#from[this.#cursor] as number) ? this.#cursor : -1;
  }
}

/**
 * The error a call above the rate meets, shaped as HTTP clients throw it (`status`, `headers`): the policy's
 * classifier reads it as throttling with the server's Retry-After, as it reads a real 429.
 */
function rateLimitedError(name: string, retryAfterSeconds: number): Error {
  return Object.assign(new Error(`${name} answered 429 Too Many Requests`), {
    status: 429,
    headers: { 'retry-after': String(retryAfterSeconds) },
  });
}
