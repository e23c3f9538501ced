export { backoffDelay } from './backoff.js';
export * from './classify/index.js';
export {
  type AdmissionRefusal,
  decide,
  decideRefusedAdmission,
  decideSync,
  type SyncDecideContext,
} from './decide.js';
export { type BackoffInput, type DurationInput, definePolicy, type PolicyInput } from './define-policy.js';
export { applyJitter, type JitterInput, jitterBounds } from './jitter.js';
export { type PlanOptions, planForWindow, type WindowPlan } from './plan-window.js';
export { getPreset, type PresetName, presets } from './presets.js';
export { type AttemptContext, type RetryEvent, type RetryOptions, retry } from './retry.js';
export { type RetryDelayOptions, retryDelay, retryDelayBounds } from './retry-delay.js';
export { type SampledRetry, type SampledSchedule, type Spread, sampleSchedule } from './sample-schedule.js';
export { worstCaseSpanMs } from './schedule-span.js';
