import { isCorruptBudgetStateError } from '../errors/corrupt-budget-state-error.js';
import type { BudgetStore, StoreRead } from './store.js';
import { PPM } from './window.js';

/**
 * One dependency's budget as `stormguard budget status` shows it. Plain JSON.
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
}

/**
 * Reads every dependency a store holds, with the settings its writers stored; only reads. Dependencies
 * whose keys expired between listing and reading are left out; one whose state cannot be read is listed
 * with `unreadable` set, and the others are read as usual.
 *
 * @example
 * const rows = await budgetStatus(new RedisBudgetStore({ redis, prefix: 'stormguard' }));
 */
export async function budgetStatus(store: BudgetStore): Promise<BudgetStatus[]> {
  const rows: BudgetStatus[] = [];
  for (const dependency of await store.dependencies()) {
    let read: StoreRead | undefined;
    try {
      read = await store.read(dependency);
    } catch (error) {
      if (!isCorruptBudgetStateError(error)) throw error;
      rows.push({ ...UNREADABLE, dependency, unreadable: error.reason });
      continue;
    }
    if (!read) continue;
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
    rows.push(row);
  }
  return rows;
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
