import { z } from 'zod';
import { parseWith } from '../common/validation.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { definePolicy, type PolicyInput } from '../policy/define-policy.js';
import { getPreset } from '../policy/presets.js';
import { durationSchema } from '../policy/schema.js';
import type { RetryPolicy } from '../policy/types.js';

/**
 * A config file's content: named policies, each a full policy or `{ preset: 'email', ...overrides }`, plus
 * the settings `lint` checks them against.
 *
 * @example
 * // stormguard.config.yaml
 * // deadLetter: jobs-dlq
 * // idempotencyKeyTtlMs: 48h
 * // policies:
 * //   email: { preset: email, maxAttempts: 6 }
 * //   search: { maxAttempts: 5, backoff: { type: exponential, baseMs: 2s, maxDelayMs: 10m } }
 */
export interface PolicyConfigInput {
  /** The dead-letter queue terminal failures go to; `false` declares there is none. Default: not named. */
  deadLetter?: string | false;
  /** How long idempotency keys live, for `key-required` policies that do not say. Default: not named. */
  idempotencyKeyTtlMs?: number | string;
  policies: Record<string, PolicyEntry>;
}

/** One named policy in a config file: a full policy, or a preset with overrides. */
export type PolicyEntry = (Partial<PolicyInput> & { preset: string }) | PolicyInput;

/** A loaded config file: every policy validated and complete. */
export interface PolicyConfig {
  deadLetter?: string | false;
  idempotencyKeyTtlMs?: number;
  policies: Record<string, RetryPolicy>;
}

/** The file-level shape; the entries are validated one by one (so `lint` can report each). */
export const configSchema = z.strictObject({
  deadLetter: z
    .union([z.string().min(1), z.literal(false)], { error: 'must be a queue name or false' })
    .optional(),
  idempotencyKeyTtlMs: durationSchema()
    .refine((ms) => ms > 0, 'must be > 0')
    .optional(),
  policies: z
    .record(z.string(), z.unknown(), { error: 'must be an object of named policies' })
    .refine((p) => Object.keys(p).length > 0, 'must name at least one policy'),
});

/** The validated file-level settings of a config, its entries not yet resolved. */
export type ConfigShape = z.output<typeof configSchema>;

/**
 * Checks a config's file-level shape (`policies`, `deadLetter`, `idempotencyKeyTtlMs`); throws a
 * `ValidationError` naming `source`.
 *
 * @example
 * const shape = parseConfigShape(await readConfigFile(path), path);
 */
export function parseConfigShape(data: unknown, source: string): ConfigShape {
  return parseWith(configSchema, data, `config ${source}`);
}

/**
 * Turns one entry into a complete policy: the preset it names (if any) with the entry's fields on top
 * (`backoff` and `retryAfter` merge field by field unless the backoff type changes), the entry's key as
 * its name unless it names itself, and (for a `key-required` policy) the config's key TTL when the entry
 * has none.
 *
 * @example
 * resolvePolicyEntry('newsletter', { preset: 'email', maxAttempts: 5 }, {}); // email, 5 attempts
 */
export function resolvePolicyEntry(
  key: string,
  entry: unknown,
  defaults: { idempotencyKeyTtlMs?: number | undefined },
): RetryPolicy {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry))
    throw new InvalidInputError(
      `policy "${key}": must be an object (a policy, or { preset: name, ...overrides })`,
    );
  const { preset, ...own } = entry as Record<string, unknown> & { preset?: unknown };
  let input: Record<string, unknown> = { name: key, ...own };
  if (preset !== undefined) {
    if (typeof preset !== 'string')
      throw new InvalidInputError(
        `policy "${key}": preset must be a preset name such as "email" or "idempotent-internal", got ${JSON.stringify(preset)}`,
      );
    input = merge(getPreset(preset) as unknown as Record<string, unknown>, input);
  }
  // The config's key TTL describes the idempotency store; it concerns only policies that use keys.
  if (
    input.idempotency === 'key-required' &&
    input.idempotencyKeyTtlMs === undefined &&
    defaults.idempotencyKeyTtlMs !== undefined
  )
    input.idempotencyKeyTtlMs = defaults.idempotencyKeyTtlMs;
  return definePolicy(input as unknown as PolicyInput);
}

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base, ...over };
  const baseBackoff = base.backoff as Record<string, unknown> | undefined;
  const overBackoff = over.backoff as Record<string, unknown> | undefined;
  if (
    isObject(baseBackoff) &&
    isObject(overBackoff) &&
    (overBackoff.type ?? baseBackoff.type) === baseBackoff.type
  )
    out.backoff = { ...baseBackoff, ...overBackoff };
  if (isObject(base.retryAfter) && isObject(over.retryAfter))
    out.retryAfter = { ...base.retryAfter, ...over.retryAfter };
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
