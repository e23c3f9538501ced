/**
 * stormguard/store-kit: the maths a store or an adapter implements, for authors of a budget, breaker or flow
 * store on another database, or of another queue adapter. The stores of stormguard/redis and
 * stormguard/postgres, the simulator and the BullMQ worker run these same functions; an application never
 * needs them (the root `stormguard` has what it uses). See docs/api.md, "Store kit".
 *
 * @example
 * import { budgetWindow, stepBreaker } from 'stormguard/store-kit';
 * const window = budgetWindow({ ratio: 0.2, windowMs: 60_000, buckets: 10, minAllowance: 10 });
 */

// The circuit breaker's state machine, as one pure step over a plain record.
export {
  type BreakerBucket,
  type BreakerOp,
  type BreakerRecord,
  type BreakerStep,
  initialBreakerRecord,
  stepBreaker,
} from '../breaker/machine.js';
export {
  BREAKER_WINDOW_BUCKETS,
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
