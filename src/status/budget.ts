import type { BudgetStore, StoreRead } from '../budget/store.js';
import { PPM } from '../budget/window.js';
import { isCorruptBudgetStateError } from '../errors/corrupt-budget-state-error.js';

/**
 * One dependency's fleet-wide retry budget, as its store holds it. Plain JSON: `stormguard budget
 * status --json`, the Prometheus exporter and the console all show these figures.
 *
 * @example
 * for (const row of await budgetStatus(store)) console.log(row.dependency, row.headroom);
 */
export interface BudgetStatus {
  dependency: string;
  allowance: number;
  spent: number;
  denied: number;
  successes: number;
  /** Retries still available in the window: `max(0, allowance − spent)`. */
  headroom: number;
  /** The settings the counts were computed with (those the dependency's writers last stored). */
  ratio: number;
  windowMs: number;
  minAllowance: number;
  /**
   * Set when the dependency's stored state cannot be read (its counts are then 0): what is wrong. Its
   * next retry decision replaces it; other dependencies are unaffected.
   */
  unreadable?: string;
  /**
   * Set while a change of settings is rolling out (docs/budget.md "Changing a budget's settings"): the settings
   * of the higher version that take over once they hold a whole window of counts.
   */
  pending?: { ratio: number; windowMs: number; minAllowance: number; settingsVersion: number };
  /**
   * True when the figures come from a worker's local fallback rather than the shared store (a live
   * `RetryBudget` whose store is unreachable). Never set by a read of the store itself.
   */
  degraded?: boolean;
}

/**
 * What the budget part of the read model needs: every budget store is one.
 *
 * @example
 * const source: BudgetStatusSource = new MemoryBudgetStore();
 */
export type BudgetStatusSource = Pick<BudgetStore, 'read' | 'dependencies'>;

/**
 * Reads every dependency a store holds, with the settings its writers stored; only reads. Dependencies
 * whose keys expired between listing and reading are left out; one whose state cannot be read is listed
 * with `unreadable` set, and the others are read as usual.
 *
 * @example
 * const rows = await budgetStatus(new RedisBudgetStore({ redis, prefix: 'stormguard' }));
 */
export async function budgetStatus(store: BudgetStatusSource): Promise<BudgetStatus[]> {
  const rows: BudgetStatus[] = [];
  for (const dependency of await store.dependencies()) {
    const row = await budgetStatusOf(store, dependency);
    if (row) rows.push(row);
  }
  return rows;
}

/**
 * One dependency's budget as {@link budgetStatus} reads it; `undefined` when the store holds nothing
 * for it. A state that cannot be read comes back with `unreadable` set, never as an error.
 *
 * @example
 * const search = await budgetStatusOf(store, 'search'); // { allowance: 10, spent: 3, headroom: 7, ... }
 */
export async function budgetStatusOf(
  store: Pick<BudgetStore, 'read'>,
  dependency: string,
): Promise<BudgetStatus | undefined> {
  let read: StoreRead | undefined;
  try {
    read = await store.read(dependency);
  } catch (error) {
    if (!isCorruptBudgetStateError(error)) throw error;
    return { ...UNREADABLE, dependency, unreadable: error.reason };
  }
  if (!read) return undefined;
  const row: BudgetStatus = {
    dependency,
    allowance: read.allowance,
    spent: read.spent,
    denied: read.denied,
    successes: read.successes,
    headroom: Math.max(0, read.allowance - read.spent),
    ratio: read.window.ratioPpm / PPM,
    windowMs: read.window.windowMs,
    minAllowance: read.window.minAllowance,
  };
  if (read.pending)
    row.pending = {
      ratio: read.pending.ratioPpm / PPM,
      windowMs: read.pending.windowMs,
      minAllowance: read.pending.minAllowance,
      settingsVersion: read.pending.version,
    };
  return row;
}

const UNREADABLE = {
  allowance: 0,
  spent: 0,
  denied: 0,
  successes: 0,
  headroom: 0,
  ratio: 0,
  windowMs: 0,
  minAllowance: 0,
};
