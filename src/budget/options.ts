import { z } from 'zod';
import type { Clock } from '../common/clock.js';
import { parseWith } from '../common/validation.js';
import type { BudgetMode, BudgetStore } from './store.js';
import { ratioToPpm } from './window.js';

/**
 * What the budget does while its store is unreachable or slower than `timeoutMs`:
 * - `local` (default): a conservative budget in this process: the floor only (`minAllowance` retries per
 *   window per process, whatever the successes), so a fleet of N workers allows at most N × floor.
 * - `deny`: refuse every retry (fail closed).
 * - `allow`: grant every retry (fail open; per-job attempt ceilings still apply).
 *
 * @example
 * new RetryBudget({ store, fallback: 'deny' });
 */
export type BudgetFallback = 'local' | 'deny' | 'allow';

/**
 * Settings of a {@link RetryBudget}. Every field but `store` has a default (listed on each field).
 *
 * @example
 * const options: RetryBudgetOptions = { store: new MemoryBudgetStore(), ratio: 0.1, minAllowance: 5 };
 */
export interface RetryBudgetOptions {
  /** Where the counts live: `MemoryBudgetStore` for one process, `RedisBudgetStore` for a fleet. */
  store: BudgetStore;
  /**
   * Retries may be at most this share of the window's successes; in (0, 1] and a whole number of millionths
   * (0.000001 steps, so it applies exactly). Default 0.2.
   */
  ratio?: number;
  /** The sliding window, in ms. Default 60 000. */
  windowMs?: number;
  /** Retries always allowed per window, whatever the traffic (so a quiet queue can still retry). Default 10. */
  minAllowance?: number;
  /** Sub-buckets per window (`windowMs` must be a whole multiple of it). Default 10. */
  buckets?: number;
  /**
   * The version of these settings. The settings stored with a dependency's state govern every worker;
   * a worker with a higher version takes them over (after one window, see docs/budget.md "Changing a budget's
   * settings"). Raise it whenever you change `ratio`, `windowMs`, `minAllowance` or `buckets`. Default 0.
   */
  settingsVersion?: number;
  /** `enforce` (default) refuses retries over budget; `shadow` grants them but counts the refusals. */
  mode?: BudgetMode;
  /**
   * What a denial does to the job: dead-letter it `budget-exhausted` (default) or defer it past the window
   * without spending an attempt. A worker with flow control in `enforce` mode holds every job the budget
   * refuses, whatever this says: the job is deferred past the window and asks again, until the budget
   * admits it or the next deferral would pass its `maxAge` (then `budget-exhausted`). This setting applies
   * without flow control, in its `shadow` mode, and while it is switched off (`stormguard flow off`).
   * See docs/flow-control.md ("What the budget refuses").
   */
  onExhausted?: 'dead-letter' | 'defer';
  /**
   * How often batched successes are pushed to a remote store, in ms; at most a tenth of `windowMs` (a
   * success that arrives later counts for less of its window). Default `min(250, windowMs / 10)`.
   */
  flushIntervalMs?: number;
  /** Bound on every call to a remote store, in ms; past it the budget degrades. Default 250. */
  timeoutMs?: number;
  /**
   * Bound on `dependencies()`, which scans the store's keys, in ms. A listing is a report, not a decision:
   * past this bound (or on any failure) it rejects alone and the budget does not degrade. Default 5 000.
   */
  listTimeoutMs?: number;
  /** Behaviour while degraded. Default `local`. */
  fallback?: BudgetFallback;
  /** How often a degraded budget checks whether its store is back, in ms. Default 1 000. */
  probeIntervalMs?: number;
  /** Time for the local fallback and for outage durations. Default: the system clock. */
  clock?: Clock;
  /**
   * Where a degradation and a recovery are logged, one line each, or `false` for nowhere (the `degraded` and
   * `recovered` events fire either way). Default: `process.emitWarning` with type `StormguardWarning`.
   */
  log?: ((message: string) => void) | false;
}

const int = (min: number, what: string) =>
  z.number().int(`${what} must be a whole number`).min(min, `${what} must be >= ${min}`);

const Schema = z
  .object({
    store: z.custom<BudgetStore>(
      (v) => typeof v === 'object' && v !== null && typeof (v as BudgetStore).trySpend === 'function',
      'must be a budget store (MemoryBudgetStore or RedisBudgetStore)',
    ),
    ratio: z
      .number()
      .gt(0, 'must be in (0, 1]: retries as a share of successes, e.g. 0.2')
      .max(1, 'must be in (0, 1]: retries as a share of successes, e.g. 0.2')
      .refine(
        (r) => ratioToPpm(r) !== undefined,
        'must be a whole number of millionths (steps of 0.000001) so it applies exactly, e.g. 0.000002',
      )
      .default(0.2),
    windowMs: int(1, 'the window').max(86_400_000, 'must be at most one day').default(60_000),
    minAllowance: int(0, 'the floor').max(1_000_000_000, 'must be at most 1e9').default(10),
    buckets: int(1, 'buckets').max(1_000, 'must be at most 1000').default(10),
    settingsVersion: int(0, 'the version').max(1_000_000_000, 'must be at most 1e9').default(0),
    mode: z.enum(['enforce', 'shadow']).default('enforce'),
    onExhausted: z.enum(['dead-letter', 'defer']).default('dead-letter'),
    flushIntervalMs: int(1, 'the interval').max(60_000, 'must be at most 60 000').optional(),
    timeoutMs: int(1, 'the timeout').max(60_000, 'must be at most 60 000').default(250),
    listTimeoutMs: int(1, 'the timeout').max(600_000, 'must be at most 600 000').default(5_000),
    fallback: z.enum(['local', 'deny', 'allow']).default('local'),
    probeIntervalMs: int(1, 'the interval').max(600_000, 'must be at most 600 000').default(1_000),
    clock: z.custom<Clock>((v) => typeof (v as Clock)?.now === 'function', 'must have now()').optional(),
    log: z
      .custom<((message: string) => void) | false>(
        (v) => v === false || typeof v === 'function',
        'must be a function (message) => void, or false',
      )
      .optional(),
  })
  .superRefine((o, ctx) => {
    if (o.flushIntervalMs !== undefined && o.flushIntervalMs * 10 > o.windowMs)
      ctx.addIssue({
        code: 'custom',
        path: ['flushIntervalMs'],
        message: `must be at most a tenth of windowMs (${o.windowMs}): successes flushed later count for less of their window; use at most ${Math.max(1, Math.floor(o.windowMs / 10))}`,
      });
    if (o.windowMs % o.buckets !== 0)
      ctx.addIssue({
        code: 'custom',
        path: ['windowMs'],
        message: `must be a whole multiple of buckets (${o.buckets}), e.g. ${o.buckets * Math.max(1, Math.round(o.windowMs / o.buckets))}`,
      });
  });

/** The options with every default filled in. */
export type ResolvedBudgetOptions = Required<Omit<RetryBudgetOptions, 'clock' | 'log'>> &
  Pick<RetryBudgetOptions, 'clock' | 'log'>;

/** Validates budget options, naming each bad field, its value and the rule (a `ValidationError`). */
export function resolveBudgetOptions(options: RetryBudgetOptions): ResolvedBudgetOptions {
  const o = parseWith(Schema, options, 'retry budget');
  return {
    ...o,
    flushIntervalMs: o.flushIntervalMs ?? Math.max(1, Math.min(250, Math.floor(o.windowMs / 10))),
  } as ResolvedBudgetOptions;
}
