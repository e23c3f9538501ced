import { BREAKER_WINDOW_BUCKETS, type ResolvedBreakerOptions } from './options.js';
import type {
  BreakerSnapshot,
  BreakerStateName,
  BreakerTransition,
  BreakerTransitionReason,
} from './types.js';

/**
 * One sub-bucket of the sliding window: calls recorded while `floor(now / bucketMs) === index`.
 *
 * @example
 * // { index: 294117647, successes: 12, failures: 3 }
 */
export interface BreakerBucket {
  index: number;
  successes: number;
  failures: number;
}

/**
 * The stored state of one dependency's breaker. Plain JSON (in the spirit of cockatiel's `toJSON()`), so
 * the same state can sit in memory, in a Redis hash, or in a test fixture. The Redis script
 * (`src/redis/lua/breaker-update-1.lua`) implements the same machine over the same fields.
 *
 * @example
 * const record: BreakerRecord = initialBreakerRecord(); // closed, empty window
 */
export interface BreakerRecord {
  state: BreakerStateName;
  consecutiveFailures: number;
  openedAtMs?: number;
  halfOpenAtMs?: number;
  probesAdmitted: number;
  probeSuccesses: number;
  /** When the last probe was admitted; a probe that never reports frees its slot a cool-down later. */
  probeRoundAtMs?: number;
  buckets: BreakerBucket[];
}

/**
 * What a store is asked to do. `peek` changes nothing. `successes` only counts a batch of successes (see
 * `batchedSuccesses` of {@link stepBreaker}).
 *
 * @example
 * stepBreaker(record, 'peek', now, options).view.state;
 */
export type BreakerOp = 'acquire' | 'success' | 'failure' | 'peek' | 'successes';

/**
 * The outcome of one {@link stepBreaker}.
 *
 * @example
 * const { record: next, allowed, transitions } = stepBreaker(record, 'acquire', now, options);
 */
export interface BreakerStep {
  record: BreakerRecord;
  /** For `acquire`: may the call go downstream. False for every other op. */
  allowed: boolean;
  /** For `acquire`: the call took a half-open probe slot. */
  probe: boolean;
  transitions: BreakerTransition[];
  view: Omit<BreakerSnapshot, 'dependency' | 'degraded'>;
}

/**
 * A closed breaker with an empty window.
 *
 * @example
 * stepBreaker(initialBreakerRecord(), 'acquire', Date.now(), resolveBreakerOptions()).allowed; // true
 */
export function initialBreakerRecord(): BreakerRecord {
  return { state: 'closed', consecutiveFailures: 0, probesAdmitted: 0, probeSuccesses: 0, buckets: [] };
}

/**
 * The breaker state machine, pure: applies one operation at `nowMs` and returns the new record, whether a
 * call is admitted, the transitions it caused and the resulting view. The input record is not modified.
 *
 * - closed → open when `consecutiveFailures` failures arrive in a row, or when the window holds at least
 *   `minimumVolume` calls and failures / volume >= `failureRateThreshold`.
 * - open → half-open once `coolDownMs` has passed (applied lazily, by the first operation after it).
 * - half-open admits at most `halfOpenProbes` probes in flight; a probe that never reports frees its slot
 *   `coolDownMs` after the last admission, so a crashed worker cannot wedge the breaker.
 * - half-open → closed after `successesToClose` successes (the window and the failure streak are cleared);
 *   half-open → open on any failure.
 * - A failure streak older than the window (no call left in it) is forgotten, like everything else.
 * - Outcomes that arrive while open (calls admitted before it opened) are counted in the window but
 *   neither extend the cool-down nor change the state.
 * - `batchedSuccesses` (default 0) are successes of calls admitted while closed that a caller counted
 *   locally and reports late, in one step: before `op` is applied they are counted in the current bucket
 *   and end the failure streak, but never count as probe successes (they were not probes). They ride on
 *   `success` and `failure`; op `successes` applies only them (`acquire` and `peek` ignore them).
 *
 * @example
 * const options = resolveBreakerOptions({ consecutiveFailures: 2 });
 * let r = initialBreakerRecord();
 * r = stepBreaker(r, 'failure', 0, options).record;
 * stepBreaker(r, 'failure', 1, options).transitions; // [{ from: 'closed', to: 'open', reason: 'consecutive-failures', atMs: 1 }]
 */
export function stepBreaker(
  input: BreakerRecord,
  op: BreakerOp,
  nowMs: number,
  options: ResolvedBreakerOptions,
  batchedSuccesses = 0,
): BreakerStep {
  const record: BreakerRecord = { ...input, buckets: liveBuckets(input.buckets, nowMs, options) };
  // A failure streak is only as old as the window: with no call left in it, the streak is forgotten.
  if (record.buckets.length === 0) record.consecutiveFailures = 0;
  const transitions: BreakerTransition[] = [];
  const change = (to: BreakerStateName, reason: BreakerTransitionReason) => {
    transitions.push({ from: record.state, to, reason, atMs: nowMs });
    record.state = to;
  };

  if (record.state === 'open' && nowMs >= (record.halfOpenAtMs ?? 0)) {
    change('half-open', 'cool-down-elapsed');
    record.probesAdmitted = 0;
    record.probeSuccesses = 0;
    record.probeRoundAtMs = nowMs;
  }
  if (record.state === 'half-open' && nowMs >= (record.probeRoundAtMs ?? 0) + options.coolDownMs) {
    // Probes admitted a whole cool-down ago that never reported are presumed lost.
    record.probesAdmitted = record.probeSuccesses;
  }

  let allowed = false;
  let probe = false;
  const open = (reason: BreakerTransitionReason) => {
    change('open', reason);
    record.openedAtMs = nowMs;
    record.halfOpenAtMs = nowMs + options.coolDownMs;
    record.probesAdmitted = 0;
    record.probeSuccesses = 0;
    delete record.probeRoundAtMs;
  };

  if (batchedSuccesses > 0 && (op === 'success' || op === 'failure' || op === 'successes')) {
    addToBucket(record, nowMs, options, 'success', batchedSuccesses);
    record.consecutiveFailures = 0;
  }
  if (op === 'acquire') {
    if (record.state === 'closed') allowed = true;
    else if (
      record.state === 'half-open' &&
      record.probesAdmitted - record.probeSuccesses < options.halfOpenProbes
    ) {
      allowed = probe = true;
      record.probesAdmitted += 1;
      record.probeRoundAtMs = nowMs;
    }
  } else if (op === 'success' || op === 'failure') {
    addToBucket(record, nowMs, options, op);
    if (op === 'success') {
      record.consecutiveFailures = 0;
      if (record.state === 'half-open') {
        record.probeSuccesses += 1;
        if (record.probeSuccesses >= options.successesToClose) {
          change('closed', 'probes-succeeded');
          record.buckets = [];
          record.probesAdmitted = 0;
          record.probeSuccesses = 0;
          delete record.halfOpenAtMs;
          delete record.probeRoundAtMs;
        }
      }
    } else {
      record.consecutiveFailures += 1;
      if (record.state === 'half-open') open('probe-failed');
      else if (record.state === 'closed') {
        const { failures, volume } = totals(record.buckets);
        if (record.consecutiveFailures >= options.consecutiveFailures) open('consecutive-failures');
        else if (volume >= options.minimumVolume && failures * 1_000_000 >= options.failureRatePpm * volume)
          open('failure-rate');
      }
    }
  }
  return { record, allowed, probe, transitions, view: viewOf(record, nowMs) };
}

function liveBuckets(
  buckets: BreakerBucket[],
  nowMs: number,
  options: ResolvedBreakerOptions,
): BreakerBucket[] {
  const oldest = Math.floor(nowMs / options.bucketMs) - BREAKER_WINDOW_BUCKETS;
  return buckets.filter((b) => b.index > oldest);
}

function addToBucket(
  record: BreakerRecord,
  nowMs: number,
  options: ResolvedBreakerOptions,
  outcome: 'success' | 'failure',
  count = 1,
): void {
  const index = Math.floor(nowMs / options.bucketMs);
  const current = record.buckets.find((b) => b.index === index);
  const bucket = current ? { ...current } : { index, successes: 0, failures: 0 };
  if (outcome === 'success') bucket.successes += count;
  else bucket.failures += count;
  record.buckets = [...record.buckets.filter((b) => b.index !== index), bucket];
}

function totals(buckets: BreakerBucket[]): { successes: number; failures: number; volume: number } {
  let successes = 0;
  let failures = 0;
  for (const b of buckets) {
    successes += b.successes;
    failures += b.failures;
  }
  return { successes, failures, volume: successes + failures };
}

function viewOf(record: BreakerRecord, nowMs: number): BreakerStep['view'] {
  const view: BreakerStep['view'] = {
    state: record.state,
    ...totals(record.buckets),
    consecutiveFailures: record.consecutiveFailures,
    probesAdmitted: record.probesAdmitted,
    probeSuccesses: record.probeSuccesses,
    nowMs,
  };
  if (record.openedAtMs !== undefined) view.openedAtMs = record.openedAtMs;
  if (record.halfOpenAtMs !== undefined && record.state !== 'closed') view.halfOpenAtMs = record.halfOpenAtMs;
  return view;
}
