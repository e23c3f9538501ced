import type { ListedBreaker } from '../breaker/types.js';
import { systemClock } from '../common/clock.js';
import { firstLineOf } from '../common/error-text.js';
import { attentionOf, needsAttention } from './attention.js';
import { type BudgetStatus, budgetStatus } from './budget.js';
import { readDeadLetters } from './dead-letters.js';
import { readLimits } from './limits.js';
import type {
  DependencyDeadLetters,
  DependencyFlowStatus,
  DependencyLimitStatus,
  DependencyStatus,
  FleetStatus,
  FleetStatusOptions,
  FleetStatusSources,
  FlowMarkStatus,
  ParkedJobsStatus,
  PausedWorkerStatus,
  QueueStatus,
  StatusSourceError,
} from './types.js';

const DEFAULT_BREAKDOWN_LIMIT = 10_000;

/**
 * Reads the fleet's state from its stores, once: every dependency's budget and breaker, every
 * dead-letter queue's counts and each dependency's share of them, flow control's kill switch, marks,
 * paused workers and parked jobs, each limited dependency's limits, and which dependencies need
 * attention. Only reads. One source that fails leaves its part absent and is
 * reported in `errors` (or rethrown with `throwOnError`); the others are read as usual.
 *
 * The dead-letter part is a handful of index reads per dependency and queue, never a walk over records
 * (except the bounded breakdown of `breakdownLimit`). Budgets and breakers are listed from their stores'
 * dependency registries on Redis, from their tables on PostgreSQL, so no part grows with the keyspace.
 *
 * @example
 * import { readFleetStatus } from 'stormguard';
 * import { RedisBreakerStore, RedisBudgetStore, RedisDeadLetterStore } from 'stormguard/redis';
 *
 * const status = await readFleetStatus({
 *   budget: new RedisBudgetStore({ redis }),
 *   breaker: new RedisBreakerStore({ redis }),
 *   deadLetters: new RedisDeadLetterStore({ redis }),
 * });
 * for (const name of status.needsAttention) console.log(name);
 */
export async function readFleetStatus(
  sources: FleetStatusSources,
  options: FleetStatusOptions = {},
): Promise<FleetStatus> {
  const clock = options.clock ?? systemClock;
  const errors: StatusSourceError[] = [];
  const attempt = async <T>(source: StatusSourceError['source'], read: () => Promise<T>) => {
    try {
      return await read();
    } catch (error) {
      if (options.throwOnError) throw error;
      errors.push({ source, message: firstLineOf(error) });
      return undefined;
    }
  };

  // Budgets, breakers and limits are read at the same time (each is a listing, then a read per
  // dependency). Their errors are still reported in this order.
  const [budgetRead, breakerRead, limitsRead] = await Promise.all([
    sources.budget ? settle(() => budgetStatus(sources.budget!)) : undefined,
    sources.breaker ? settle(() => sources.breaker!.list()) : undefined,
    sources.limits ? settle(() => readLimits(sources.limits!)) : undefined,
  ]);
  const budgets = budgetRead && (await attempt('budget', budgetRead));
  const breakers = breakerRead && (await attempt('breaker', breakerRead));
  const limits = limitsRead && (await attempt('limits', limitsRead));

  const names = new Set<string>(options.dependencies ?? []);
  for (const row of budgets ?? []) names.add(row.dependency);
  for (const row of breakers ?? []) names.add(row.dependency);
  for (const [dependency] of limits ?? []) names.add(dependency);
  const dependencyNames = [...names].sort(byCodeUnits);

  let queues: QueueStatus[] = [];
  let deadLetters: Map<string, DependencyDeadLetters> | undefined;
  if (sources.deadLetters) {
    const read = await attempt('dead-letters', () =>
      readDeadLetters(
        sources.deadLetters!,
        options.queues,
        dependencyNames,
        options.breakdownLimit ?? DEFAULT_BREAKDOWN_LIMIT,
      ),
    );
    if (read) {
      queues = read.queues;
      deadLetters = read.byDependency;
    }
  }

  // Flow control is asked about what the stores above found; it may add dependencies of its own.
  const flow = sources.flow;
  const scope = { dependencies: dependencyNames, queues: options.queues ?? queues.map((q) => q.queue) };
  const paused = flow?.pausedWorkers
    ? await attempt('flow', async () => [...(await flow.pausedWorkers!(scope))])
    : undefined;
  const parked = flow?.parkedJobs
    ? await attempt('flow', async () => [...(await flow.parkedJobs!(scope))])
    : undefined;
  const switchedOff = flow?.switchedOff ? await attempt('flow', async () => flow.switchedOff!()) : undefined;
  for (const row of [...(paused ?? []), ...(parked ?? [])])
    if (!names.has(row.dependency)) {
      names.add(row.dependency);
      dependencyNames.push(row.dependency);
    }
  dependencyNames.sort(byCodeUnits);
  // Marks are read for every dependency listed, those only paused workers or parked jobs named included.
  const marks = flow?.marks
    ? await attempt('flow', async () => [...(await flow.marks!({ ...scope, dependencies: dependencyNames }))])
    : undefined;
  const markOf = new Map((marks ?? []).map((m) => [m.dependency, m]));

  const budgetOf = new Map<string, BudgetStatus>((budgets ?? []).map((b) => [b.dependency, b]));
  const breakerOf = new Map<string, ListedBreaker>((breakers ?? []).map((b) => [b.dependency, b]));
  const limitsOf = new Map<string, DependencyLimitStatus>(limits ?? []);
  const dependencies = dependencyNames.map((dependency): DependencyStatus => {
    const parts: Omit<DependencyStatus, 'attention'> = { dependency };
    const budget = budgetOf.get(dependency);
    if (budget) parts.budget = budget;
    const breaker = breakerOf.get(dependency);
    if (breaker) parts.breaker = breaker;
    const dl = deadLetters?.get(dependency);
    if (dl) parts.deadLetters = dl;
    if (paused) parts.pausedWorkers = paused.filter((p) => p.dependency === dependency).length;
    if (parked) parts.parkedJobs = sumFor(parked, dependency);
    const mark = markOf.get(dependency);
    if (mark) parts.flow = flowOf(mark);
    const limit = limitsOf.get(dependency);
    if (limit) parts.limits = limit;
    return { ...parts, attention: attentionOf(parts) };
  });

  const status: FleetStatus = {
    atMs: breakers?.[0]?.nowMs ?? clock.now(),
    dependencies,
    needsAttention: needsAttention(dependencies),
    queues,
    errors,
  };
  if (paused) status.pausedWorkers = paused satisfies PausedWorkerStatus[];
  if (parked) status.parkedJobs = parked satisfies ParkedJobsStatus[];
  if (switchedOff !== undefined) status.flowControl = { on: !switchedOff };
  return status;
}

/** Runs `read` now; the returned function gives its result or throws its error, when asked. */
async function settle<T>(read: () => Promise<T>): Promise<() => Promise<T>> {
  try {
    const value = await read();
    return async () => value;
  } catch (error) {
    return async () => {
      throw error;
    };
  }
}

function flowOf(mark: FlowMarkStatus): DependencyFlowStatus {
  if (mark.recoveredAtMs === undefined) return { down: mark.down };
  return {
    down: mark.down,
    recoveredAtMs: mark.recoveredAtMs,
    recoveredForMs: mark.nowMs - mark.recoveredAtMs,
  };
}

function sumFor(parked: readonly ParkedJobsStatus[], dependency: string): number {
  let n = 0;
  for (const p of parked) if (p.dependency === dependency) n += p.count;
  return n;
}

/** Sorted as every store sorts: by UTF-16 code units, never by a locale. */
function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The budgets of a {@link FleetStatus}, one per dependency that has one, sorted by name: what
 * `stormguard budget status` prints.
 *
 * @example
 * const rows = budgetsOf(await readFleetStatus({ budget: store }));
 */
export function budgetsOf(status: FleetStatus): BudgetStatus[] {
  return status.dependencies.flatMap((d) => (d.budget ? [d.budget] : []));
}

/**
 * The breakers of a {@link FleetStatus}, one per dependency that has one, sorted by name: what
 * `stormguard breaker status` prints.
 *
 * @example
 * const open = breakersOf(await readFleetStatus({ breaker: store })).filter((b) => b.state === 'open');
 */
export function breakersOf(status: FleetStatus): ListedBreaker[] {
  return status.dependencies.flatMap((d) => (d.breaker ? [d.breaker] : []));
}
