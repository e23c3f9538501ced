import type { StoreDownEvent, StoreUpEvent } from '../common/store-outage.js';
import type { BudgetWindow } from './window.js';

/** A dependency's budget as the whole fleet sees it. Plain JSON: shown by the CLI and exported as metrics. */
export interface BudgetSnapshot {
  dependency: string;
  /** Retries the window allows: `max(minAllowance, floor(ratio × successes))`. */
  allowance: number;
  /** Retries granted in the window. */
  spent: number;
  /** Retries refused in the window (in shadow mode: refusals it would have made). Never counted as spent. */
  denied: number;
  /** Successes recorded in the window (weighted by the sliding window's overlap). */
  successes: number;
  windowMs: number;
  /** True when the store was unreachable and a local fallback answered. */
  degraded: boolean;
}

/** The outcome of `trySpend`. */
export interface SpendResult extends BudgetSnapshot {
  granted: boolean;
}

/** Events a RetryBudget emits; metrics and logs subscribe. */
export interface BudgetEvents {
  granted: SpendResult;
  denied: SpendResult & { mode: 'enforce' | 'shadow' };
  /** The store is unreachable; the fallback (`mode`) answers. `error` is always set here. */
  degraded: StoreDownEvent & { store: 'budget'; error: unknown; mode: string };
  /** The store answers again. */
  recovered: StoreUpEvent & { store: 'budget' };
  flushed: { dependency: string; successes: number };
  /** The settings stored with a dependency overrule this budget's (said once per dependency and settings). */
  overruled: { dependency: string; stored: BudgetWindow; own: BudgetWindow };
  /** A dependency's stored state could not be read (found by a read, or replaced by a write), said once; only that dependency is affected. */
  reset: { dependency: string; reason: string };
}
