/**
 * Flow control's public surface (re-exported by the package root): its options, its store contract and the
 * memory store. Its semantics as pure functions (admission, the gate, the pacer, the slow-start ramp) are
 * exported for store and adapter authors by stormguard/store-kit.
 */
export { MemoryFlowStore } from './memory-store.js';
export type { FlowControlOptions } from './options.js';
export type { FlowSnapshot, FlowStore, PausedWorkerEntry } from './store.js';
