import { InvalidInputError } from '../errors/invalid-input-error.js';
import { definePolicy } from './define-policy.js';
import type { RetryPolicy } from './types.js';

/**
 * Idempotent internal call (a cache warm, an internal RPC): an attempt costs next to nothing, so the
 * recovery window matters more than the count. Most internal services recover inside a 15-minute deploy
 * window; 9 attempts (the top of the 6–9 range for this class) on a 2 s base, factor 2, give 8 retries whose
 * un-jittered delays add up to 8½ minutes, and `maxAgeMs: 15m` ends the curve at the window. Equal jitter
 * keeps at least half of every delay, so the retries still cover 4¼–8½ minutes of the window while a
 * fleet's retries spread out. Unknown errors are retried: the call is idempotent and cheap.
 *
 * @example
 * await retry(() => cache.warm(key), presets.idempotentInternal);
 */
const idempotentInternal = definePolicy({
  name: 'idempotentInternal',
  maxAttempts: 9,
  maxAgeMs: '15m',
  backoff: { type: 'exponential', baseMs: '2s', factor: 2, maxDelayMs: '5m' },
  jitter: 'equal',
  retryUnknown: true,
});

/**
 * Metered third-party API: every attempt bills (cents), so 4 attempts, and the server's `Retry-After` is
 * honoured up to 10 minutes even past the backoff (waiting is free; retrying early bills and earns another
 * 429). Base 5 s, factor 3, cap 2 m, full jitter; a 30-minute max age. Unknown errors are not retried:
 * paying to repeat a failure nobody understands is waste.
 *
 * @example
 * await retry(() => crm.upsert(contact), presets.meteredApi, { signal });
 */
const meteredApi = definePolicy({
  name: 'meteredApi',
  maxAttempts: 4,
  maxAgeMs: '30m',
  backoff: { type: 'exponential', baseMs: '5s', factor: 3, maxDelayMs: '2m' },
  jitter: 'full',
  retryAfter: { maxMs: '10m', onExceeded: 'wait' },
});

/**
 * Paid inference or rendering: an attempt costs tens of cents, so 2 attempts. The one retry covers a
 * transport blip (network family) or a throttle rejected before any work was billed (408/429); a 5xx may
 * already have consumed the compute, so it is not retried. Base 3 s, cap 30 s, full jitter, 10-minute max
 * age; a `Retry-After` above 2 minutes dead-letters rather than holding an expensive job open.
 *
 * @example
 * await retry(() => renderer.render(scene), presets.paidInference, { signal });
 */
const paidInference = definePolicy({
  name: 'paidInference',
  maxAttempts: 2,
  maxAgeMs: '10m',
  backoff: { type: 'exponential', baseMs: '3s', factor: 2, maxDelayMs: '30s' },
  jitter: 'full',
  retryOn: ['network', 'http-throttle'],
  retryAfter: { maxMs: '2m', onExceeded: 'dead-letter' },
});

/**
 * Non-idempotent side effect (a webhook, a ledger write): a repeat is a correctness bug, so a job gets
 * exactly one attempt unless it carries an idempotency key; with one, 3 attempts behind the guard. Keys live
 * 24 hours, well past the 1-hour max age, so a late retry (or a replay the same day) still finds the stored
 * outcome. Base 5 s, cap 1 m, full jitter; unknown errors are not retried.
 *
 * @example
 * await queue.add('notify', data, { jobId: `notify:${orderId}` }); // the job id doubles as the key
 */
const nonIdempotent = definePolicy({
  name: 'nonIdempotent',
  maxAttempts: 3,
  maxAgeMs: '1h',
  backoff: { type: 'exponential', baseMs: '5s', factor: 2, maxDelayMs: '1m' },
  jitter: 'full',
  idempotency: 'key-required',
  idempotencyKeyTtlMs: '24h',
});

/**
 * Batch reconciliation: an attempt costs minutes of CPU, so 2 attempts; restarting from a checkpoint beats
 * re-running the batch. The single retry waits a fixed 5 minutes (equal jitter: 2½–5 minutes, so nightly
 * batches that failed together do not restart together), within a 1-hour max age. Unknown errors are not
 * retried: a batch that fails for an unknown reason will most likely fail the same way again.
 *
 * @example
 * const policy = definePolicy({ ...presets.batchReconciliation, maxAgeMs: '3h' });
 */
const batchReconciliation = definePolicy({
  name: 'batchReconciliation',
  maxAttempts: 2,
  maxAgeMs: '1h',
  backoff: { type: 'fixed', delayMs: '5m' },
  jitter: 'equal',
});

/**
 * Sending email: 8 attempts, exponential from 5 s (factor 2) capped at 15 minutes,
 * full jitter, a 24-hour max age, retrying only network errors and the provider's 5xx (`retryOn: ['network',
 * 'http-5xx']`; a 4xx, 429 included, is not retried). Note what the numbers imply: the 7 retries wait at most
 * 5+10+…+320 s = 10 m 35 s in total, so neither the 15-minute cap nor the 24-hour age ever binds; the
 * attempt count is what ends the curve. A duplicate email is a nuisance, not a loss, so no key is required.
 *
 * @example
 * const decision = await decide({ policy: presets.email, error, attemptsMade, createdAtMs, nowMs, random, dependency: 'mail' });
 */
const email = definePolicy({
  name: 'email',
  maxAttempts: 8,
  maxAgeMs: '24h',
  backoff: { type: 'exponential', baseMs: '5s', factor: 2, maxDelayMs: '15m' },
  jitter: 'full',
  retryOn: ['network', 'http-5xx'],
});

/**
 * Payment: 4 attempts, exponential from 10 s capped at 5 minutes, full jitter, a 1-hour
 * max age, and an idempotency key required per operation. "Only explicitly retryable errors from the
 * gateway" means: only a `TransientError` the gateway client threw on purpose is retried (`retryOn: []`,
 * `retryUnknown: false`); a raw 5xx or socket error is dead-lettered for a person to check whether the
 * charge went through. Keys live 7 days so a dead-lettered payment replayed days later still finds its
 * outcome instead of charging twice.
 *
 * @example
 * if (res.status === 503) throw new TransientError('gateway busy', { retryAfterMs: 30_000 });
 */
const payment = definePolicy({
  name: 'payment',
  maxAttempts: 4,
  maxAgeMs: '1h',
  backoff: { type: 'exponential', baseMs: '10s', factor: 2, maxDelayMs: '5m' },
  jitter: 'full',
  retryOn: [],
  retryUnknown: false,
  idempotency: 'key-required',
  idempotencyKeyTtlMs: '7d',
});

/**
 * Complete, validated policies for five job classes (by what an attempt costs) and for sending email and
 * taking payments. Each one's doc comment gives the reason for its numbers. Spread one into `definePolicy` to adjust it.
 *
 * @example
 * const mine = definePolicy({ ...presets.email, name: 'newsletter', maxAttempts: 5 });
 */
export const presets = Object.freeze({
  idempotentInternal,
  meteredApi,
  paidInference,
  nonIdempotent,
  batchReconciliation,
  email,
  payment,
});

/** The name of a preset. */
export type PresetName = keyof typeof presets;

/**
 * Looks a preset up by name, accepting `camelCase` or `kebab-case` (`paid-inference`). Throws
 * `InvalidInputError` listing the valid names.
 *
 * @example
 * getPreset('email').maxAttempts; // 8
 */
export function getPreset(name: string): RetryPolicy {
  const key = name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  if (Object.hasOwn(presets, key)) return presets[key as PresetName];
  throw new InvalidInputError(`unknown preset "${name}"; use one of ${Object.keys(presets).join(', ')}`);
}
