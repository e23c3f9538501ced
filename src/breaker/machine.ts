import { BREAKER_WINDOW_BUCKETS, type ResolvedBreakerOptions } from './options.js';
import type {
  BreakerOverride,
  BreakerOverrideOp,
  BreakerOverrideRequest,
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
  /** When the current half-open period began: it names the period in every probe ticket it issues. */
  halfOpenedAtMs?: number;
  /**
   * Probes of this half-open period that have not reported yet, by sequence number (1, 2, … in the
   * order admitted), with their admission time. A probe that does not report within `coolDownMs` is
   * presumed lost: its slot is freed and its late outcome no longer counts as a probe's.
   */
  probesInFlight: BreakerProbe[];
  buckets: BreakerBucket[];
  /** An operator's hold on the breaker (see `force-open`, `force-closed` and `reset` of {@link stepBreaker}). */
  override?: BreakerOverride;
}

/**
 * A half-open probe that was admitted and has not reported yet.
 *
 * @example
 * // { seq: 1, atMs: 1764682200000 }
 */
export interface BreakerProbe {
  seq: number;
  atMs: number;
}

/**
 * What an outcome may carry besides itself (see {@link stepBreaker}).
 *
 * @example
 * stepBreaker(record, 'success', now, options, { ticket: admission.ticket });
 */
export interface BreakerStepInput {
  /** Successes of calls admitted while closed, counted before the op; never probe successes. Default 0. */
  batchedSuccesses?: number;
  /** For `success` / `failure`: the probe ticket the call was admitted with, if it was a probe. */
  ticket?: string;
  /** For `force-open`, `force-closed` and `reset`: why, and who asked. */
  override?: BreakerOverrideRequest;
}

/**
 * What a store is asked to do. `peek` changes nothing. `successes` only counts a batch of successes (see
 * `batchedSuccesses` of {@link stepBreaker}). `force-open`, `force-closed` and `reset` are an operator's
 * overrides ({@link BreakerOverrideOp}).
 *
 * @example
 * stepBreaker(record, 'peek', now, options).view.state;
 */
export type BreakerOp = 'acquire' | 'success' | 'failure' | 'peek' | 'successes' | BreakerOverrideOp;

/**
 * The operator override ops, for validating input.
 *
 * @example
 * BREAKER_OVERRIDE_OPS.includes('reset'); // true
 */
export const BREAKER_OVERRIDE_OPS: readonly BreakerOverrideOp[] = ['force-open', 'force-closed', 'reset'];

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
  /** For an `acquire` that admitted a probe: the ticket its outcome must carry to count as the probe's. */
  ticket?: string;
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
  return {
    state: 'closed',
    consecutiveFailures: 0,
    probesAdmitted: 0,
    probeSuccesses: 0,
    probesInFlight: [],
    buckets: [],
  };
}

/**
 * The ticket of probe `seq` of the half-open period that began at `halfOpenedAtMs`: `"<ms>:<seq>"`.
 * Plain text, so the Redis script issues and checks the very same tickets.
 *
 * @example
 * probeTicket(1764682200000, 1); // '1764682200000:1'
 */
export function probeTicket(halfOpenedAtMs: number, seq: number): string {
  return `${halfOpenedAtMs}:${seq}`;
}

/**
 * True when a record holds nothing that a fresh {@link initialBreakerRecord} would not: closed, no call
 * left in the window at `nowMs`, no failure streak. Such a record can be dropped without losing anything.
 *
 * @example
 * if (isIdleBreakerRecord(record, clock.now(), options)) records.delete(dependency);
 */
export function isIdleBreakerRecord(
  record: BreakerRecord,
  nowMs: number,
  options: ResolvedBreakerOptions,
): boolean {
  return record.state === 'closed' && liveBuckets(record.buckets, nowMs, options).length === 0;
}

/**
 * The breaker state machine, pure: applies one operation at `nowMs` and returns the new record, whether a
 * call is admitted, the transitions it caused and the resulting view. The input record is not modified.
 *
 * - closed → open when `consecutiveFailures` failures arrive in a row, or when the window holds at least
 *   `minimumVolume` calls and failures / volume >= `failureRateThreshold`.
 * - open → half-open once `coolDownMs` has passed (applied lazily, by the first operation after it).
 * - half-open admits at most `halfOpenProbes` probes in flight, each with a ticket naming the half-open
 *   period and the probe; a probe that does not report within `coolDownMs` of its admission is presumed
 *   lost and frees its slot, so a crashed worker cannot wedge the breaker.
 * - Only admitted probes count: an outcome moves a half-open breaker only when it carries the ticket of a
 *   probe of the current period that is still in flight, and each ticket counts once. Outcomes without
 *   one (calls admitted while closed that finish during half-open), with a ticket of an earlier period, or
 *   of a probe presumed lost, are counted in the window and change nothing else.
 * - half-open → closed after `successesToClose` probe successes (the window and the failure streak are
 *   cleared); half-open → open on a probe failure.
 * - A failure streak older than the window (no call left in it) is forgotten, like everything else.
 * - Outcomes that arrive while open (calls admitted before it opened) are counted in the window but
 *   neither extend the cool-down nor change the state.
 * - `input.batchedSuccesses` (default 0) are successes of calls admitted while closed that a caller counted
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
  { batchedSuccesses = 0, ticket, override }: BreakerStepInput = NO_INPUT,
): BreakerStep {
  const unchanged = unchangedBy(input, op, nowMs, options);
  if (unchanged) return unchanged;
  // Arrays are never changed in place, only replaced: the copy shares the input's until it changes them.
  const record: BreakerRecord = {
    ...input,
    probesInFlight: input.probesInFlight ?? [],
    buckets: liveBuckets(input.buckets, nowMs, options),
  };
  // A failure streak is only as old as the window: with no call left in it, the streak is forgotten.
  if (record.buckets.length === 0) record.consecutiveFailures = 0;
  const transitions: BreakerTransition[] = [];

  const forced = record.override?.state;
  if (record.state === 'open' && forced !== 'open' && nowMs >= (record.halfOpenAtMs ?? 0)) {
    change(record, transitions, nowMs, 'half-open', 'cool-down-elapsed');
    record.probesAdmitted = 0;
    record.probeSuccesses = 0;
    record.halfOpenedAtMs = nowMs;
    record.probesInFlight = [];
  }
  // Probes admitted a whole cool-down ago that never reported are presumed lost.
  record.probesInFlight = probesStillInFlight(record.probesInFlight, nowMs, options.coolDownMs);

  let allowed = false;
  let probe = false;
  let issued: string | undefined;

  if (batchedSuccesses > 0 && (op === 'success' || op === 'failure' || op === 'successes')) {
    addToBucket(record, nowMs, options, 'success', batchedSuccesses);
    record.consecutiveFailures = 0;
  }
  if (op === 'force-open' || op === 'force-closed' || op === 'reset') {
    applyOverride(record, transitions, op, nowMs, override);
  } else if (op === 'acquire') {
    if (record.state === 'closed') allowed = true;
    else if (record.state === 'half-open' && record.probesInFlight.length < options.halfOpenProbes) {
      allowed = probe = true;
      record.probesAdmitted += 1;
      record.probesInFlight = [...record.probesInFlight, { seq: record.probesAdmitted, atMs: nowMs }];
      issued = probeTicket(record.halfOpenedAtMs ?? nowMs, record.probesAdmitted);
    }
  } else if (op === 'success' || op === 'failure') {
    addToBucket(record, nowMs, options, op);
    const isProbe = takeProbe(record, ticket);
    if (op === 'success') {
      record.consecutiveFailures = 0;
      if (isProbe) {
        record.probeSuccesses += 1;
        if (record.probeSuccesses >= options.successesToClose) {
          change(record, transitions, nowMs, 'closed', 'probes-succeeded');
          record.buckets = [];
          endPeriod(record);
          delete record.halfOpenAtMs;
        }
      }
    } else {
      record.consecutiveFailures += 1;
      if (isProbe) open(record, transitions, nowMs, options, 'probe-failed');
      else if (record.state === 'closed' && forced !== 'closed') {
        const { failures, volume } = totals(record.buckets);
        if (record.consecutiveFailures >= options.consecutiveFailures)
          open(record, transitions, nowMs, options, 'consecutive-failures');
        else if (volume >= options.minimumVolume && failures * 1_000_000 >= options.failureRatePpm * volume)
          open(record, transitions, nowMs, options, 'failure-rate');
      }
    }
  }
  const step: BreakerStep = { record, allowed, probe, transitions, view: viewOf(record, nowMs) };
  if (issued !== undefined) step.ticket = issued;
  return step;
}

const NO_INPUT: BreakerStepInput = Object.freeze({});

/**
 * The step of an `acquire` or `peek` on a closed breaker that changes nothing (every bucket live, no
 * streak to forget, no probe lapsed): the input record itself, with the view, and no copy. `undefined`
 * for every other step.
 */
function unchangedBy(
  input: BreakerRecord,
  op: BreakerOp,
  nowMs: number,
  options: ResolvedBreakerOptions,
): BreakerStep | undefined {
  if ((op !== 'acquire' && op !== 'peek') || input.state !== 'closed') return undefined;
  const probes = input.probesInFlight;
  if (probes === undefined || probesStillInFlight(probes, nowMs, options.coolDownMs) !== probes)
    return undefined;
  const buckets = input.buckets;
  if (liveBuckets(buckets, nowMs, options) !== buckets) return undefined;
  if (buckets.length === 0 && input.consecutiveFailures !== 0) return undefined;
  return {
    record: input,
    allowed: op === 'acquire',
    probe: false,
    transitions: [],
    view: viewOf(input, nowMs),
  };
}

/** Moves `record` to `to`, noting the transition. */
function change(
  record: BreakerRecord,
  transitions: BreakerTransition[],
  nowMs: number,
  to: BreakerStateName,
  reason: BreakerTransitionReason,
): void {
  transitions.push({ from: record.state, to, reason, atMs: nowMs });
  record.state = to;
}

/** Ends the current half-open period: no probe admitted, none succeeded, none in flight. */
function endPeriod(record: BreakerRecord): void {
  record.probesAdmitted = 0;
  record.probeSuccesses = 0;
  record.probesInFlight = [];
  delete record.halfOpenedAtMs;
}

function open(
  record: BreakerRecord,
  transitions: BreakerTransition[],
  nowMs: number,
  options: ResolvedBreakerOptions,
  reason: BreakerTransitionReason,
): void {
  change(record, transitions, nowMs, 'open', reason);
  record.openedAtMs = nowMs;
  record.halfOpenAtMs = nowMs + options.coolDownMs;
  endPeriod(record);
}

/** The probes admitted less than a cool-down ago (the same array when none has lapsed). */
function probesStillInFlight(probes: BreakerProbe[], nowMs: number, coolDownMs: number): BreakerProbe[] {
  for (const p of probes)
    if (!(nowMs < p.atMs + coolDownMs)) return probes.filter((q) => nowMs < q.atMs + coolDownMs);
  return probes;
}

/**
 * An operator's override, applied to `record` in place: forcing moves the breaker to the forced state
 * (one transition when it was not there already) and ends any half-open period; a reset leaves a fresh
 * closed breaker with no override.
 */
function applyOverride(
  record: BreakerRecord,
  transitions: BreakerTransition[],
  op: BreakerOverrideOp,
  nowMs: number,
  request: BreakerOverrideRequest | undefined,
): void {
  if (op === 'reset') {
    if (record.state !== 'closed') change(record, transitions, nowMs, 'closed', 'reset');
    Object.assign(record, initialBreakerRecord());
    for (const field of ['openedAtMs', 'halfOpenAtMs', 'halfOpenedAtMs', 'override'] as const)
      delete record[field];
    return;
  }
  const to = op === 'force-open' ? 'open' : 'closed';
  if (record.state !== to) {
    change(record, transitions, nowMs, to, op === 'force-open' ? 'forced-open' : 'forced-closed');
    if (to === 'open') record.openedAtMs = nowMs;
  }
  endPeriod(record);
  delete record.halfOpenAtMs;
  if (to === 'closed') {
    record.buckets = [];
    record.consecutiveFailures = 0;
  }
  record.override = { state: to, reason: request?.reason ?? '', by: request?.by ?? 'anonymous', atMs: nowMs };
}

/**
 * Whether `ticket` names a probe of the current half-open period that is still in flight; if so, the
 * probe reports now and leaves the in-flight list (a ticket counts once). The ticket must be exactly the
 * one {@link probeTicket} issued: the period is compared as issued, never re-parsed, so a clock with
 * fractional milliseconds (the simulator's) names its periods as well as Redis TIME does.
 */
function takeProbe(record: BreakerRecord, ticket: string | undefined): boolean {
  if (record.state !== 'half-open' || ticket === undefined || record.halfOpenedAtMs === undefined)
    return false;
  const seq = Number(ticket.slice(ticket.lastIndexOf(':') + 1));
  if (!record.probesInFlight.some((p) => p.seq === seq)) return false;
  if (ticket !== probeTicket(record.halfOpenedAtMs, seq)) return false;
  record.probesInFlight = record.probesInFlight.filter((p) => p.seq !== seq);
  return true;
}

function liveBuckets(
  buckets: BreakerBucket[],
  nowMs: number,
  options: ResolvedBreakerOptions,
): BreakerBucket[] {
  const oldest = Math.floor(nowMs / options.bucketMs) - BREAKER_WINDOW_BUCKETS;
  // The same array when every bucket is live (the common case): no copy per step.
  for (const b of buckets) if (!(b.index > oldest)) return buckets.filter((c) => c.index > oldest);
  return buckets;
}

function addToBucket(
  record: BreakerRecord,
  nowMs: number,
  options: ResolvedBreakerOptions,
  outcome: 'success' | 'failure',
  count = 1,
): void {
  const index = Math.floor(nowMs / options.bucketMs);
  // A new array (the input record's is shared), the current bucket moved last, as a copy.
  const buckets: BreakerBucket[] = [];
  let current: BreakerBucket | undefined;
  for (const b of record.buckets) {
    if (b.index !== index) buckets.push(b);
    else current ??= b;
  }
  const bucket = current ? { ...current } : { index, successes: 0, failures: 0 };
  if (outcome === 'success') bucket.successes += count;
  else bucket.failures += count;
  buckets.push(bucket);
  record.buckets = buckets;
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
  const { successes, failures, volume } = totals(record.buckets);
  const view: BreakerStep['view'] = {
    state: record.state,
    successes,
    failures,
    volume,
    consecutiveFailures: record.consecutiveFailures,
    probesAdmitted: record.probesAdmitted,
    probeSuccesses: record.probeSuccesses,
    probesInFlight: record.probesInFlight.length,
    nowMs,
  };
  if (record.openedAtMs !== undefined) view.openedAtMs = record.openedAtMs;
  if (record.override !== undefined) view.override = { ...record.override };
  if (record.halfOpenAtMs !== undefined && record.state !== 'closed') view.halfOpenAtMs = record.halfOpenAtMs;
  return view;
}
