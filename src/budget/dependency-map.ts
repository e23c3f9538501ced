import { z } from 'zod';
import { dependencyNameProblem } from '../common/names.js';
import { parseWith } from '../common/validation.js';
import type { SpendResult } from './types.js';

/**
 * Which dependency (or dependencies) each task calls. Budgets and breakers are keyed by the dependency, so
 * ten tasks that call the search cluster share one budget instead of holding ten.
 *
 * @example
 * const map: DependencyMap = { index_document: 'search', reindex_tenant: 'search', sync_order: ['crm', 'mail'] };
 */
export type DependencyMap = Readonly<Record<string, string | readonly string[]>>;

const name = z.string().superRefine((value, ctx) => {
  const problem = dependencyNameProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const MapSchema = z
  .record(z.string(), z.union([name, z.array(name).min(1, 'must list at least one dependency')]))
  .superRefine((map, ctx) => {
    for (const task of Object.keys(map)) {
      const problem = dependencyNameProblem(task);
      if (problem) ctx.addIssue({ code: 'custom', path: [task], message: `task name ${problem}` });
    }
  });

/**
 * Validates a dependency map once, at start-up: every task and dependency name non-empty, without braces,
 * whitespace or control characters, and every list non-empty. Returns the map, frozen.
 *
 * @example
 * const map = defineDependencyMap({ index_document: 'search', send_receipt: 'mail' });
 */
export function defineDependencyMap(map: Record<string, string | readonly string[]>): DependencyMap {
  parseWith(MapSchema, map, 'dependency map');
  return Object.freeze({ ...map });
}

/**
 * The dependency a task's failures are charged to: its mapped name (the first, for a task mapped to
 * several), or the task's own name when it has no entry, so a missing entry fails safe with a budget of
 * its own rather than silently sharing another's.
 *
 * @example
 * dependencyFor('index_document', { index_document: 'search' }); // 'search'
 * dependencyFor('resize_image', { index_document: 'search' }); // 'resize_image'
 */
export function dependencyFor(task: string, map: DependencyMap): string {
  const entry = Object.hasOwn(map, task) ? map[task] : undefined;
  if (entry === undefined) return task;
  return typeof entry === 'string' ? entry : (entry[0] ?? task);
}

/**
 * Every dependency a task calls (one for a task mapped to a single name, the task itself when unmapped).
 *
 * @example
 * dependenciesFor('sync_order', { sync_order: ['crm', 'mail'] }); // ['crm', 'mail']
 */
export function dependenciesFor(task: string, map: DependencyMap): readonly string[] {
  const entry = Object.hasOwn(map, task) ? map[task] : undefined;
  if (entry === undefined) return [task];
  return typeof entry === 'string' ? [entry] : entry;
}

/**
 * What charging one retry against several dependencies decided.
 *
 * @example
 * const { granted, deniedBy } = await chargeAll(budget, ['crm', 'mail']);
 */
export interface MultiSpendResult {
  /** True when every dependency granted the retry. */
  granted: boolean;
  /** One result per dependency asked, in order; asking stops at the first denial. */
  results: SpendResult[];
  /** The dependency whose budget refused, when one did. */
  deniedBy?: string;
  /** The longest window among the dependencies asked (a deferral waits at least this long). */
  windowMs: number;
}

/**
 * Charges one retry to each dependency a job calls, in order, and grants it only when all of them grant.
 * Asking stops at the first denial, so dependencies after it are not charged; those granted before it keep
 * their spend (the retry would have called them again, so counting it errs on the side of caution).
 *
 * @example
 * const r = await chargeAll(budget, dependenciesFor('sync_order', map));
 * if (!r.granted) deadLetter(`budget for ${r.deniedBy} exhausted`);
 */
export async function chargeAll(
  budget: { trySpend(dependency: string): Promise<SpendResult> },
  dependencies: readonly string[],
): Promise<MultiSpendResult> {
  const results: SpendResult[] = [];
  let windowMs = 0;
  for (const dependency of new Set(dependencies)) {
    const result = await budget.trySpend(dependency);
    results.push(result);
    windowMs = Math.max(windowMs, result.windowMs);
    if (!result.granted) return { granted: false, results, deniedBy: dependency, windowMs };
  }
  return { granted: true, results, windowMs };
}
