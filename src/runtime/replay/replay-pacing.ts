import { setTimeout as timeout } from 'node:timers/promises';
import type { BudgetSnapshot } from '../../budget/types.js';
import type { Clock } from '../../common/clock.js';

/**
 * Waits `ms`, or rejects early when `signal` aborts. Injected so tests run on virtual time.
 *
 * @example
 * const sleep: Sleep = async (ms) => void clock.advance(ms); // virtual time in tests
 */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/**
 * The real sleep: a timer that an abort signal cancels.
 *
 * @example
 * await realSleep(1_000, signal);
 */
export const realSleep: Sleep = async (ms, signal) => {
  await timeout(ms, undefined, { signal });
};

/**
 * Anything that reports a dependency's budget, such as a `RetryBudget`.
 *
 * @example
 * const reader: BudgetStateReader = new RetryBudget({ store });
 */
export interface BudgetStateReader {
  state(dependency: string): BudgetSnapshot | Promise<BudgetSnapshot>;
}

/**
 * When a replay waits before putting a dependency's jobs back.
 *
 * @example
 * const gate: HealthGate = { budget, isHealthy: async (dep) => (await breaker.state(dep)) !== 'open', pollMs: 1_000 };
 */
export interface HealthGate {
  /** Wait while this budget is denying retries for the record's dependency (see {@link isBudgetDenying}). */
  budget?: BudgetStateReader;
  /** Any other check, such as a circuit breaker's state: wait while it returns false. */
  isHealthy?: (dependency: string) => boolean | Promise<boolean>;
  /** How often to look again while waiting, ms. Default: 1 000. */
  pollMs?: number;
}

/**
 * True while a budget is turning retries away: it has denied some in the current window and the retries
 * granted have reached the allowance. Replaying then would only dead-letter the jobs again; once the
 * window slides past the denials, or successes raise the allowance, the dependency counts as healthy.
 *
 * @example
 * isBudgetDenying({ allowance: 10, spent: 10, denied: 3, successes: 0, windowMs: 60_000, dependency: 'search', degraded: false }); // true
 */
export function isBudgetDenying(snapshot: BudgetSnapshot): boolean {
  return snapshot.denied > 0 && snapshot.spent >= snapshot.allowance;
}

/**
 * Resolves once `dependency` is healthy by `gate`, calling `onWait` before each wait. Rejects when
 * `signal` aborts.
 *
 * @example
 * await waitUntilHealthy('search', { budget }, realSleep, signal, () => log('waiting for search'));
 */
export async function waitUntilHealthy(
  dependency: string,
  gate: HealthGate,
  sleep: Sleep,
  signal: AbortSignal | undefined,
  onWait: () => void,
): Promise<void> {
  for (;;) {
    signal?.throwIfAborted();
    const denying = gate.budget ? isBudgetDenying(await gate.budget.state(dependency)) : false;
    const healthy = !denying && (gate.isHealthy ? await gate.isHealthy(dependency) : true);
    if (healthy) return;
    onWait();
    await sleep(gate.pollMs ?? 1_000, signal);
  }
}

/**
 * Spaces events at most `ratePerSecond` per second: the n-th event may start no earlier than
 * `first + n × 1000 / rate`. Unset or Infinity means no limit.
 *
 * @example
 * const pacer = new Pacer(50, systemClock, realSleep);
 * for (const item of items) { await pacer.next(); send(item); }
 */
export class Pacer {
  readonly #intervalMs: number;
  #nextAt: number | undefined;

  constructor(
    ratePerSecond: number | undefined,
    private readonly clock: Clock,
    private readonly sleep: Sleep,
  ) {
    this.#intervalMs = ratePerSecond && Number.isFinite(ratePerSecond) ? 1_000 / ratePerSecond : 0;
  }

  /** Waits for the next slot. */
  async next(signal?: AbortSignal): Promise<void> {
    if (this.#intervalMs === 0) return;
    const now = this.clock.now();
    const at = Math.max(now, this.#nextAt ?? now);
    if (at > now) await this.sleep(at - now, signal);
    this.#nextAt = at + this.#intervalMs;
  }
}
