import { z } from 'zod';
import { parseDuration } from '../common/duration.js';
import type { Classifier } from './types.js';

/** The longest attempt ceiling a policy may declare: anything larger is "unlimited" in practice. */
export const MAX_ATTEMPTS_LIMIT = 1_000;

const DURATION_RULE = 'must be a whole number of milliseconds >= 0 or a duration like 500ms, 90s, 15m, 4h';

/**
 * The longest duration a policy field may hold: 365 days. A retry that waits longer, or a job kept
 * retrying longer, is no retry policy; and a value like `1e300` must not pass as a whole number of ms.
 */
export const MAX_POLICY_DURATION_MS = 365 * 86_400_000;
const TOO_LONG = 'must be at most 365d (one year); longer waits belong to a dead-letter queue and replay';

/** A duration field: a whole number of milliseconds or a string `parseDuration` reads (`'15m'`), up to a year. */
export function durationSchema() {
  return z.union([z.number(), z.string()], { error: DURATION_RULE }).transform((value, ctx): number => {
    let ms: number;
    if (typeof value === 'number') {
      if (!Number.isInteger(value) || value < 0) {
        ctx.addIssue({
          code: 'custom',
          message: value < 0 ? 'must be >= 0 (a delay cannot be negative)' : DURATION_RULE,
        });
        return z.NEVER;
      }
      ms = value;
    } else {
      try {
        ms = parseDuration(value);
      } catch (error) {
        const tooLong = error instanceof Error && error.message.includes('longest duration');
        ctx.addIssue({ code: 'custom', message: tooLong ? TOO_LONG : DURATION_RULE });
        return z.NEVER;
      }
    }
    if (ms > MAX_POLICY_DURATION_MS) {
      ctx.addIssue({ code: 'custom', message: TOO_LONG });
      return z.NEVER;
    }
    return ms;
  });
}

const positiveDuration = (why: string) => durationSchema().refine((ms) => ms > 0, `must be > 0 (${why})`);

/** A backoff as `definePolicy` accepts it (durations may be strings); output in whole milliseconds. */
export const backoffSchema = z.discriminatedUnion(
  'type',
  [
    z.strictObject({
      type: z.literal('fixed'),
      delayMs: durationSchema(),
      maxDelayMs: durationSchema().optional(),
    }),
    z.strictObject({
      type: z.literal('exponential'),
      baseMs: positiveDuration('a zero base retries at once, every time'),
      factor: z
        .number({ error: 'must be a finite number from 1 to 100' })
        .min(1, 'must be >= 1 (a factor below 1 shrinks the delays)')
        .max(100, 'must be <= 100')
        .default(2),
      maxDelayMs: durationSchema(),
    }),
  ],
  { error: "must be { type: 'fixed', delayMs } or { type: 'exponential', baseMs, factor, maxDelayMs }" },
);

const enumOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.join(', ')}` });

/** The zod schema behind `definePolicy`: fields, defaults and every cross-field rule. */
export const policySchema = z
  .strictObject({
    name: z
      .string({ error: 'must be a non-empty string' })
      .min(1, 'must be a non-empty string')
      .default('policy'),
    maxAttempts: z
      .number({
        error: `must be a finite integer from 1 to ${MAX_ATTEMPTS_LIMIT} (unlimited attempts are not allowed)`,
      })
      .int('must be an integer (it counts executions)')
      .min(1, 'must be >= 1 (the first execution counts as an attempt)')
      .max(
        MAX_ATTEMPTS_LIMIT,
        `must be <= ${MAX_ATTEMPTS_LIMIT} (use maxAgeMs and a dead-letter queue instead)`,
      ),
    maxAgeMs: positiveDuration('a job needs time for its first attempt').optional(),
    backoff: backoffSchema.default({ type: 'exponential', baseMs: 2_000, factor: 2, maxDelayMs: 600_000 }),
    jitter: enumOf(['none', 'full', 'equal', 'decorrelated'] as const).default('full'),
    retryUnknown: z.boolean({ error: 'must be true or false' }).default(false),
    retryAfter: z
      .strictObject({
        maxMs: positiveDuration('a bound of zero refuses every Retry-After').default(900_000),
        onExceeded: enumOf(['wait', 'dead-letter'] as const).default('dead-letter'),
      })
      .default({ maxMs: 900_000, onExceeded: 'dead-letter' }),
    idempotency: enumOf(['idempotent', 'key-required', 'non-idempotent'] as const).default('idempotent'),
    idempotencyKeyTtlMs: positiveDuration('a key must outlive the retries it guards').optional(),
    whenBreakerOpen: enumOf(['delay', 'dead-letter'] as const).default('delay'),
    classifiers: z
      .array(
        z.custom<Classifier>(
          (v) => typeof v === 'function',
          'must be a function (error) => Classification | undefined',
        ),
      )
      .optional(),
    retryOn: z.array(enumOf(['network', 'http-5xx', 'http-throttle', 'database'] as const)).optional(),
  })
  .superRefine((p, ctx) => {
    const b = p.backoff;
    if (b.type === 'exponential' && b.maxDelayMs < b.baseMs)
      ctx.addIssue({
        code: 'custom',
        path: ['backoff', 'maxDelayMs'],
        message: `must be >= backoff.baseMs (${b.baseMs}); a cap below the base caps every delay`,
      });
    if (b.type === 'fixed' && b.maxDelayMs !== undefined && b.maxDelayMs < b.delayMs)
      ctx.addIssue({
        code: 'custom',
        path: ['backoff', 'maxDelayMs'],
        message: `must be >= backoff.delayMs (${b.delayMs})`,
      });
    if (p.idempotency === 'non-idempotent' && p.maxAttempts > 1)
      ctx.addIssue({
        code: 'custom',
        path: ['maxAttempts'],
        message:
          "must be 1 for a non-idempotent job (a retry could repeat its side effect); use idempotency: 'key-required' and give jobs an idempotency key to retry",
      });
    if (p.idempotencyKeyTtlMs !== undefined && p.maxAgeMs !== undefined && p.idempotencyKeyTtlMs < p.maxAgeMs)
      ctx.addIssue({
        code: 'custom',
        path: ['idempotencyKeyTtlMs'],
        message: `must be >= maxAgeMs (${p.maxAgeMs}); a key that expires before the last retry makes that retry unsafe`,
      });
  });
