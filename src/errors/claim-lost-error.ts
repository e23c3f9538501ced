import { TransientError } from './transient-error.js';

const brand = Symbol.for('stormguard.ClaimLostError');

/**
 * Thrown by the idempotency guard when the work it ran under a key finished after its claim had expired
 * and another caller had taken the key over: the side effect may have run twice (once here, once there).
 * It happens when the claim could not be renewed in time (the event loop was blocked, or the store was
 * unreachable, for longer than `inFlightTtlMs`). `value` is what this call's work returned; the stored
 * outcome is the other caller's. It is a TransientError: a retry of the job gets the stored outcome
 * without running the work a third time.
 *
 * @example
 * try {
 *   await guard.once(`charge:${id}`, charge);
 * } catch (e) {
 *   if (isClaimLostError(e)) alert(`possible double charge for ${e.key}`);
 * }
 */
export class ClaimLostError extends TransientError {
  readonly [brand] = true;
  override name = 'ClaimLostError';

  constructor(
    /** The idempotency key whose claim was lost. */
    readonly key: string,
    /** What this call's work returned. */
    readonly value: unknown,
  ) {
    super(
      `idempotency key "${key}": the claim expired while the work ran and another caller took the key over, so the side effect may have run twice; keep the event loop free and the store reachable for inFlightTtlMs, or raise inFlightTtlMs`,
    );
  }
}

/**
 * True for a {@link ClaimLostError}, across package copies.
 *
 * @example
 * if (isClaimLostError(error)) log.warn(`the work under ${error.key} may have run twice`);
 */
export function isClaimLostError(error: unknown): error is ClaimLostError {
  return typeof error === 'object' && error !== null && brand in error;
}
