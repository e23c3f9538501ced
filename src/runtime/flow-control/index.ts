/**
 * Flow control's semantics, as pure functions every adapter and the simulator share: admission before a
 * run that holds no grant, the gate that holds a job while its dependency is down (pause or park), the
 * GCRA pacer and the slow-start ramp that paces recovery.
 */
export { type AdmitContext, admit, needsAdmission } from './admission.js';
export {
  type DependencyHealth,
  type FlowVerdict,
  flowVerdict,
  type GateSettings,
  type HoldKind,
} from './gate.js';
export { MemoryFlowStore } from './memory-store.js';
export type { FlowControlOptions } from './options.js';
export { type PaceVerdict, pace, paceMany } from './pacing.js';
export {
  budgetStoppedDenying,
  SLOW_START_DOUBLINGS,
  type SlowStartRamp,
  slowStartAllowance,
  slowStartRate,
} from './slow-start.js';
export type { FlowSnapshot, FlowStore, PausedWorkerEntry } from './store.js';
