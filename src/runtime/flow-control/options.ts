import { z } from 'zod';
import { dependencyNameProblem } from '../../common/names.js';
import { parseWith } from '../../common/validation.js';
import type { FlowStore } from './store.js';

/**
 * Options of flow control (`createWorker(…, { flowControl })`). Every field but `store` has a default.
 *
 * @example
 * const flowControl: FlowControlOptions = { store: new RedisFlowStore({ redis }), queueDependency: 'search',
 *   slowStartMs: 30_000, floorPerSecond: 2 };
 */
export interface FlowControlOptions {
  /**
   * Where the fleet shares flow state: `RedisFlowStore` or `PostgresFlowStore` for a fleet, `MemoryFlowStore`
   * for one process.
   */
  store: FlowStore;
  /**
   * `enforce` (default) pauses, parks and paces. `shadow` only reports what it would do (the worker's
   * `flow-hold` events with `shadow: true`, and the metrics), so a team can check its dependency mapping
   * on real traffic before flow control acts.
   */
  mode?: 'enforce' | 'shadow';
  /** `false` turns flow control off in this worker (the fleet-wide switch is `stormguard flow off`). Default true. */
  enabled?: boolean;
  /**
   * The dependency every job of this queue needs. Set, the whole queue is paused (BullMQ's rate limit)
   * while it is down. Unset, the queue mixes dependencies: a job whose dependency is down is parked and the
   * others keep flowing. Default unset.
   */
  queueDependency?: string;
  /** How long the admitted rate ramps up after a recovery, in ms (0: no ramp). Default 30 000. */
  slowStartMs?: number;
  /** Attempts per second admitted fleet-wide right after a recovery. Default 1. */
  floorPerSecond?: number;
  /**
   * A ceiling on attempts per second per dependency, first attempts included, at all times. Default none.
   *
   * @deprecated Use the worker's `limits: { <dependency>: { maxRatePerSecond } }` (docs/limits.md), which
   * needs neither flow control nor a breaker. Until the next release each rate given here becomes that
   * dependency's `limits` rate (where both are set, the lower wins), enforced by limits, not by flow control.
   */
  maxRatePerSecond?: Readonly<Record<string, number>>;
  /** The longest a job waits in the worker for its paced slot; a later slot delays it instead. Default 1 000. */
  maxPaceWaitMs?: number;
  /**
   * How far ahead a parked job is delayed. A release brings it back sooner; if none does (every worker
   * gone), it comes back on its own and meets the gate again. Default 15 minutes.
   */
  parkHorizonMs?: number;
  /** How often parked jobs are released while their dependency is healthy, in ms. Default 250. */
  releaseIntervalMs?: number;
  /** The most parked jobs one release takes (the ramp may allow fewer). Default 100. */
  releaseBatch?: number;
  /** How long a job is held while a half-open breaker's probes are all in flight, in ms. Default 1 000. */
  probeWaitMs?: number;
  /**
   * How long this worker reuses what it read of a dependency (breaker and flow state, the kill switch),
   * in ms. Default 250 (the breaker's own state-cache time).
   */
  stateCacheMs?: number;
  /**
   * While this worker holds its queue paused for a dependency, how often it refreshes its paused-worker
   * entry in the store (one write per interval, whatever the job count), in ms. The entry ages out three
   * intervals after its last refresh, so a crashed worker leaves the list by itself. Default 5 000.
   */
  pausedReportMs?: number;
}

/** {@link FlowControlOptions} with every default applied. */
export type ResolvedFlowControlOptions = Required<Omit<FlowControlOptions, 'queueDependency' | 'store'>> & {
  store: FlowStore;
  queueDependency: string | undefined;
};

const positive = z.number().finite().positive();
const wholeMs = z.number().int().min(0);
// The one dependency-name rule (src/common/names.ts), so flow control accepts what the budget and breaker do.
const dependencyName = z.string().superRefine((name, ctx) => {
  const problem = dependencyNameProblem(name);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `dependency name ${problem}` });
});

const Schema = z
  .object({
    store: z.custom<FlowStore>(
      (v) => typeof v === 'object' && v !== null && typeof (v as FlowStore).admit === 'function',
      'must be a FlowStore (RedisFlowStore, PostgresFlowStore, MemoryFlowStore)',
    ),
    mode: z.enum(['enforce', 'shadow']).default('enforce'),
    enabled: z.boolean().default(true),
    queueDependency: dependencyName.optional(),
    slowStartMs: wholeMs.default(30_000),
    floorPerSecond: positive.default(1),
    maxRatePerSecond: z.record(dependencyName, positive).default({}),
    maxPaceWaitMs: wholeMs.default(1_000),
    parkHorizonMs: z
      .number()
      .int()
      .min(1_000)
      .default(15 * 60_000),
    releaseIntervalMs: z.number().int().min(10).default(250),
    releaseBatch: z.number().int().min(1).default(100),
    probeWaitMs: z.number().int().min(10).default(1_000),
    stateCacheMs: wholeMs.default(250),
    pausedReportMs: z.number().int().min(100).default(5_000),
  })
  .strict();

/**
 * Validates flow-control options and applies the defaults; a bad field throws a `ValidationError` naming it.
 *
 * @example
 * resolveFlowControlOptions({ store }).slowStartMs; // 30000
 */
export function resolveFlowControlOptions(options: FlowControlOptions): ResolvedFlowControlOptions {
  const parsed = parseWith(Schema, options, 'flow control options');
  return { ...parsed, queueDependency: parsed.queueDependency, store: options.store };
}
