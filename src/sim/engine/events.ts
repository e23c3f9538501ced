/**
 * The engine's events, each one int32 in the {@link EventQueue}: the low {@link KIND_BITS} bits say what
 * happened, the rest carry a number (an arrival source, a slot, a job or a dependency). One int per event
 * keeps the queue free of objects, so a run of millions of events costs the garbage collector nothing.
 */

/** A job arrives from arrival source `value`. */
export const ARRIVAL = 0;
/** Slot `value`'s call has answered. */
export const ATTEMPT_DONE = 1;
/** Job `value`'s delay is over: it joins the waiting list. */
export const RETRY_DUE = 2;
/** The budgets are flushed and sampled (no payload). */
export const TICK = 3;
/** Flow control: a hold of dependency `value` ends, or a release is due. */
export const FLOW_WAKE = 4;
/** Flow control: slot `value`'s paced slot has come; it starts the job it holds. */
export const PACED_START = 5;
/** Limits: dependency `value`'s line of waiting slots is served (its pacer's next slot, or a hold's end). */
export const LIMIT_WAKE = 6;

export const KIND_BITS = 3;
export const KIND_MASK = 7;

/**
 * The event of kind `kind` about `value`.
 *
 * @example
 * queue.push(dueAtMs, event(RETRY_DUE, job));
 */
export function event(kind: number, value: number): number {
  return (value << KIND_BITS) | kind;
}
