import type { Clock } from '../../common/clock.js';
import type { RandomSource } from '../../common/random.js';
import { ValidationError } from '../../errors/validation-error.js';
import type { RetryPolicy } from '../../policy/types.js';
import type { FlowControlOptions } from '../flow-control/options.js';
import { LimitController } from './controller.js';
import type { LimitEvents } from './events.js';
import {
  type LimitsByDependency,
  type LimitsOptions,
  limitsWithRateAlias,
  resolveLimitsOptions,
} from './options.js';
import type { LimitStore } from './store.js';

/**
 * What a queue adapter's options say about limits: its own `limits` and `limitsOptions`, and what flow
 * control brings (its store, its queue's dependency, the deprecated `maxRatePerSecond`).
 */
export interface WorkerLimitOptions {
  limits?: LimitsByDependency | undefined;
  limitsOptions?: LimitsOptions | undefined;
  flowControl?: FlowControlOptions | undefined;
  dependencies?: Readonly<Record<string, string>> | undefined;
  /** The worker's breaker: its `halfOpenProbes` are the probes after a hold. */
  breaker?: unknown;
}

/** A store an adapter opened for limits by itself (its zero-config default), closed with the worker. */
export interface OwnLimitStore {
  store: LimitStore;
  close(): Promise<void>;
}

/**
 * The limits a worker enforces (its `limits` with the deprecated `flowControl.maxRatePerSecond` folded
 * in), and whether it has a limits controller at all: with limits or `limitsOptions`, or with flow control
 * (whose store then also carries operators' pauses and overrides of any dependency the worker calls).
 */
export function workerLimits(options: WorkerLimitOptions): {
  limits: LimitsByDependency | undefined;
  wanted: boolean;
  ownLimits: boolean;
} {
  const limits = limitsWithRateAlias(options.limits, options.flowControl?.maxRatePerSecond);
  const ownLimits = Object.keys(limits ?? {}).length > 0 || options.limitsOptions !== undefined;
  return { limits, wanted: ownLimits || options.flowControl !== undefined, ownLimits };
}

/**
 * Checks a worker's limits options before anything is opened, and that a store can be found: a
 * `ValidationError` names what is wrong. `hasDefault`: the adapter can open a store of its own.
 */
export function checkWorkerLimits(subject: string, options: WorkerLimitOptions, hasDefault: boolean): void {
  const { limits, ownLimits } = workerLimits(options);
  resolveLimitsOptions(limits, options.limitsOptions, subject);
  if (!ownLimits || options.limitsOptions?.store !== undefined || options.flowControl?.store !== undefined)
    return;
  if (!hasDefault)
    throw new ValidationError(`${subject} limitsOptions`, [
      {
        path: 'store',
        value: undefined,
        rule: 'limits are shared by the fleet through a flow store: pass limitsOptions.store (a RedisFlowStore or PostgresFlowStore; a MemoryFlowStore for one process)',
      },
    ]);
}

/** What building a worker's limits controller needs from its adapter. */
export interface WorkerLimitSettings {
  queue: string;
  policy: RetryPolicy;
  clock: Clock;
  random: RandomSource;
  emit: <K extends keyof LimitEvents>(event: K, payload: LimitEvents[K]) => void;
  internalError: (error: unknown) => void;
  pauseQueue?: ((forMs: number) => Promise<void> | void) | undefined;
  /** The adapter's zero-config store (BullMQ: on its connection), opened only when no store is given. */
  defaultStore?: (() => OwnLimitStore) | undefined;
}

/**
 * The worker's limits controller, or `undefined` when it has none (see {@link workerLimits}), and the store
 * it opened itself, if any. The store: `limitsOptions.store`, else flow control's, else the adapter's
 * default. The queue's own dependency (taken before each job starts; a job it holds pauses the queue): flow
 * control's `queueDependency`. Without one, the one dependency the `dependencies` mapping names, when it
 * names one, pauses the queue when it holds a job, and is taken only by the jobs it maps.
 */
export function workerLimitController(
  options: WorkerLimitOptions,
  settings: WorkerLimitSettings,
): { controller: LimitController; own: OwnLimitStore | undefined } | undefined {
  const { limits, wanted, ownLimits } = workerLimits(options);
  if (!wanted) return undefined;
  let own: OwnLimitStore | undefined;
  let store = options.limitsOptions?.store ?? options.flowControl?.store;
  if (store === undefined && ownLimits && settings.defaultStore) {
    own = settings.defaultStore();
    store = own.store;
  }
  if (store === undefined || typeof store.exchangeLimits !== 'function') return undefined;
  const breaker = options.breaker as { optionsFor?: (dependency: string) => { halfOpenProbes: number } };
  const controller = new LimitController(
    limits,
    { ...options.limitsOptions, store },
    {
      queue: settings.queue,
      store,
      clock: settings.clock,
      random: settings.random,
      emit: settings.emit,
      internalError: settings.internalError,
      retryAfterMaxMs: settings.policy.retryAfter.maxMs,
      probesFor:
        typeof breaker?.optionsFor === 'function'
          ? (dependency) => breaker.optionsFor?.(dependency).halfOpenProbes ?? 1
          : undefined,
      queueDependency: options.flowControl?.queueDependency,
      pausingDependency: pausingDependencyOf(options),
      pauseQueue: settings.pauseQueue,
    },
  );
  return { controller, own };
}

/**
 * The flow-control options a worker hands its flow controller: without the deprecated `maxRatePerSecond`,
 * which limits enforce instead (see {@link workerLimits}).
 */
export function flowOptionsWithoutRateAlias(flowControl: FlowControlOptions): FlowControlOptions {
  const { maxRatePerSecond: _alias, ...rest } = flowControl;
  return rest;
}

/**
 * The dependency whose held jobs pause the queue: flow control's `queueDependency`, else the one dependency
 * the `dependencies` mapping names. Only the first is taken up front by every job: a job whose name the
 * mapping leaves out is its own dependency and takes no slot of the mapped one.
 */
function pausingDependencyOf(options: WorkerLimitOptions): string | undefined {
  if (options.flowControl?.queueDependency !== undefined) return options.flowControl.queueDependency;
  const named = new Set(Object.values(options.dependencies ?? {}));
  return named.size === 1 ? [...named][0] : undefined;
}
