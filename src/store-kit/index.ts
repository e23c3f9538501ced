/**
 * stormguard/store-kit: the maths a store or an adapter implements and the job runtime an adapter runs, for
 * authors of a budget, breaker, flow, audit or dead-letter store on another database, or of another queue
 * adapter. The stores of stormguard/redis and stormguard/postgres, the simulator and the BullMQ and RabbitMQ
 * adapters run these same functions; an application never needs them (the root `stormguard` has what it
 * uses). See docs/api.md, "Store kit".
 *
 * @example
 * import { budgetWindow, stepBreaker } from 'stormguard/store-kit';
 * const window = budgetWindow({ ratio: 0.2, windowMs: 60_000, buckets: 10, minAllowance: 10 });
 */

// The audit log's default bound, for an audit log on another database.
export { DEFAULT_AUDIT_ENTRIES } from '../audit/validate.js';
// The circuit breaker's state machine, as one pure step over a plain record, with its defaults.
export {
  BREAKER_OVERRIDE_OPS,
  type BreakerBucket,
  type BreakerOp,
  type BreakerRecord,
  type BreakerStep,
  initialBreakerRecord,
  stepBreaker,
} from '../breaker/machine.js';
export {
  BREAKER_WINDOW_BUCKETS,
  DEFAULT_BREAKER_OPTIONS,
  type ResolvedBreakerOptions,
  resolveBreakerOptions,
} from '../breaker/options.js';
// The retry budget's sliding window, in parts per million.
export {
  type AgedSuccesses,
  allowanceFor,
  type BudgetWindow,
  budgetWindow,
  MAX_COUNT,
  PPM,
  ratioToPpm,
  sameSettings,
  type WindowCounts,
} from '../budget/window.js';
// The one dependency-name rule every part and every store applies.
export { assertDependencyName, dependencyNameProblem } from '../common/names.js';
// The job runtime's bounds, for an adapter or a store that keeps attempt state.
export { ATTEMPT_HISTORY_LIMIT } from '../runtime/attempt-history.js';
// Flow control: admission, the gate, the GCRA pacer, the slow-start ramp.
export { type AdmitContext, admit, needsAdmission } from '../runtime/flow-control/admission.js';
export {
  type DependencyHealth,
  type FlowVerdict,
  flowVerdict,
  type GateSettings,
  type HoldKind,
} from '../runtime/flow-control/gate.js';
export { type PaceVerdict, pace, paceMany } from '../runtime/flow-control/pacing.js';
export {
  budgetStoppedDenying,
  SLOW_START_DOUBLINGS,
  type SlowStartRamp,
  slowStartAllowance,
  slowStartRate,
} from '../runtime/flow-control/slow-start.js';
// The job runtime, for another queue adapter: it settles every attempt as createWorker and createConsumer do.
export { keepTraceLinks, MAX_TRACE_LINKS } from '../runtime/instrumentation.js';
export { mayHaveAttemptState } from '../runtime/job-handle.js';
export { JobRuntime, type JobRuntimeSettings } from '../runtime/job-runtime.js';
export {
  DEFAULT_BOOKKEEPING_BACKOFF,
  encodeStoredName,
  type PendingOutcome,
  type PendingWrite,
} from '../runtime/pending-outcome.js';
// What a dead-letter store on another database applies before it stores a record.
export { redactRecord } from '../runtime/redaction.js';
