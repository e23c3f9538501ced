import type { BudgetStore } from './store.js';
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
}

/**
 * Reads every dependency a store holds, with the settings its writers stored; only reads. Dependencies
 * whose keys expired between listing and reading are left out.
 *
 * @example
 * const rows = await budgetStatus(new RedisBudgetStore({ redis, prefix: 'stormguard' }));
 */
export async function budgetStatus(store: BudgetStore): Promise<BudgetStatus[]> {
  const rows: BudgetStatus[] = [];
  for (const dependency of await store.dependencies()) {
    const read = await store.read(dependency);
    if (!read) continue;
    rows.push({
      dependency,
      allowance: read.allowance,
      spent: read.spent,
      denied: read.denied,
      successes: read.successes,
      headroom: Math.max(0, read.allowance - read.spent),
      ratio: read.window.ratioPpm / PPM,
      windowMs: read.window.windowMs,
      minAllowance: read.window.minAllowance,
    });
  }
  return rows;
}
