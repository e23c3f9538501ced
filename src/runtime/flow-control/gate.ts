/**
 * The flow gate: before a job is run, should its worker take it at all? While the dependency's fleet
 * breaker is open, no: the job is held until the next half-open time, as a pause of the whole queue when
 * every job of the queue needs that dependency, or as a park of this one job in a queue that mixes
 * dependencies. Half-open with every probe slot taken, the same for a short while. Pure.
 */

/**
 * What the gate knows of a dependency: its breaker as the fleet sees it (cached for the breaker's
 * state-cache time), and whether flow control is switched off.
 *
 * @example
 * const health: DependencyHealth = { state: 'open', halfOpenInMs: 4_000, probesInFlight: 0, halfOpenProbes: 1 };
 */
export interface DependencyHealth {
  state: 'closed' | 'open' | 'half-open';
  /** Time left until an open breaker half-opens, on the breaker's clock. */
  halfOpenInMs?: number | undefined;
  /** Probes admitted in the current half-open period and not yet reported. */
  probesInFlight: number;
  /** Probes the breaker admits per half-open period (its `halfOpenProbes`). */
  halfOpenProbes: number;
}

/**
 * How a held job is held.
 * - `pause`: every job of the queue needs the dependency: stop the queue's consumption for `forMs`
 *   (BullMQ's rate limit) and put the job back unchanged.
 * - `park`: the queue mixes dependencies: set this job aside without calling anything, to be released in
 *   order once the dependency recovers; other jobs keep flowing.
 *
 * @example
 * const hold: HoldKind = 'park';
 */
export type HoldKind = 'pause' | 'park';

/**
 * The gate's answer for one job: run it, or hold it (`kind`) for `forMs` (`reason` says why).
 *
 * @example
 * const verdict: FlowVerdict = { action: 'hold', kind: 'pause', forMs: 4_000, reason: 'breaker-open' };
 */
export type FlowVerdict =
  | { action: 'run' }
  | { action: 'hold'; kind: HoldKind; forMs: number; reason: 'breaker-open' | 'probe-in-flight' };

/**
 * Settings of the gate that the verdict depends on.
 *
 * @example
 * const settings: GateSettings = { kind: 'pause', probeWaitMs: 1_000, minHoldMs: 50 };
 */
export interface GateSettings {
  /** `pause` when every job of the queue needs the dependency, `park` when the queue mixes dependencies. */
  kind: HoldKind;
  /** How long a job is held while the half-open breaker's probes are all in flight. */
  probeWaitMs: number;
  /** The shortest hold: an open breaker about to half-open still holds this long (no busy loop). */
  minHoldMs: number;
}

/**
 * The gate's verdict. Closed: run. Open: hold until it half-opens (at least `minHoldMs`). Half-open with
 * every probe slot taken: hold for `probeWaitMs`, so only the probes reach the dependency. Half-open with a
 * free slot: run (the call's breaker admission takes the slot; at most `halfOpenProbes` win it fleet-wide).
 *
 * @example
 * flowVerdict({ state: 'open', halfOpenInMs: 4_000, probesInFlight: 0, halfOpenProbes: 1 },
 *   { kind: 'park', probeWaitMs: 1_000, minHoldMs: 50 });
 * // { action: 'hold', kind: 'park', forMs: 4_000, reason: 'breaker-open' }
 */
export function flowVerdict(health: DependencyHealth, settings: GateSettings): FlowVerdict {
  if (health.state === 'closed') return RUN;
  if (health.state === 'open')
    return {
      action: 'hold',
      kind: settings.kind,
      forMs: Math.max(settings.minHoldMs, health.halfOpenInMs ?? settings.probeWaitMs),
      reason: 'breaker-open',
    };
  if (health.probesInFlight < health.halfOpenProbes) return RUN;
  return {
    action: 'hold',
    kind: settings.kind,
    forMs: Math.max(settings.minHoldMs, settings.probeWaitMs),
    reason: 'probe-in-flight',
  };
}

const RUN: FlowVerdict = Object.freeze({ action: 'run' });
