import type { OverviewSnapshot } from './overview.js';

/** One sample of a dependency's budget on the live chart. */
export interface BudgetSample {
  atMs: number;
  allowance: number;
  spent: number;
  denied: number;
  successes: number;
}

/** How far back the overview's chart reaches. */
export const HISTORY_MS = 15 * 60_000;

/**
 * The last 15 minutes of every dependency's budget, sampled by the console while it runs (it keeps no
 * history of its own anywhere else: a console started a minute ago shows a minute).
 */
export class BudgetHistory {
  readonly #series = new Map<string, BudgetSample[]>();

  add(snapshot: OverviewSnapshot): void {
    for (const dep of snapshot.dependencies) {
      if (!dep.budget || dep.budget.unreadable) continue;
      const series = this.#series.get(dep.dependency) ?? [];
      this.#series.set(dep.dependency, series);
      const { allowance, spent, denied, successes } = dep.budget;
      series.push({ atMs: snapshot.atMs, allowance, spent, denied, successes });
    }
    const cutoff = snapshot.atMs - HISTORY_MS;
    for (const [name, series] of this.#series) {
      let drop = 0;
      while (drop < series.length && (series[drop]?.atMs ?? 0) < cutoff) drop++;
      if (drop > 0) series.splice(0, drop);
      if (series.length === 0) this.#series.delete(name);
    }
  }

  /** Every dependency's samples, oldest first. */
  toJSON(): Record<string, BudgetSample[]> {
    return Object.fromEntries(this.#series);
  }
}
