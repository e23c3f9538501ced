/**
 * The idempotency guard's store contract, shared by every implementation (memory, Redis, PostgreSQL) and
 * checked by one conformance suite (src/idempotency/store.case.ts).
 */

/**
 * What `begin` found: the caller runs the work, the work is done, or someone else is running it.
 *
 * @example
 * const claim = await store.begin('charge:42', token, 30_000);
 * if (claim.state === 'done') return JSON.parse(claim.value);
 */
export type IdempotencyClaim =
  | { state: 'run' }
  | { state: 'done'; value: string }
  | { state: 'wait'; expiresInMs: number };

/**
 * Where the idempotency guard keeps one key's state: a claim while work runs, then the outcome. Every
 * method is one atomic step. `token` identifies one caller, so a caller whose claim expired can never
 * overwrite or release another caller's.
 *
 * @example
 * const guard = idempotencyGuard({ store: new MemoryIdempotencyStore({ clock }) });
 */
export interface IdempotencyStore {
  /** Claims `key` for `token` for `inFlightTtlMs`, or reports the stored outcome or the running claim. */
  begin(key: string, token: string, inFlightTtlMs: number): Promise<IdempotencyClaim>;
  /** Stores the outcome (JSON) for `ttlMs`; false when it was not stored (done already, or taken over). */
  finish(key: string, token: string, value: string, ttlMs: number): Promise<boolean>;
  /** Drops `token`'s claim after a failure so a retry may run; false when it no longer held it. */
  release(key: string, token: string): Promise<boolean>;
  /** Extends `token`'s claim; false when it was lost. */
  renew(key: string, token: string, inFlightTtlMs: number): Promise<boolean>;
}
