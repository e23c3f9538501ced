/**
 * What the game day hands each consumer process, and the settings the test computes its bounds from (the
 * bound is derived here, from design §3, never read back from the code under test).
 */
import type { BreakerOptions } from '../../../src/breaker/options.js';

/** One consumer process's settings (JSON on its command line). */
export interface GameDayConsumerSettings {
  amqpUrl: string;
  queue: string;
  /** stormguard's key prefix on both Redis servers. */
  prefix: string;
  /** Redis A: the retry budget's store alone (the one the game day kills). */
  budgetRedisPort: number;
  /** Redis B: dead letters, attempt states, idempotency claims and the breaker. */
  storesRedisPort: number;
  dependencyUrl: string;
  concurrency: number;
  inFlightTtlMs: number;
  budget: { ratio: number; minAllowance: number; windowMs: number };
  breaker: Partial<BreakerOptions>;
  verbose?: boolean;
}

/**
 * The fleet budget: 10 % of the window's successes, at least 2 retries per 60 s window. Small on purpose:
 * the failures before the breaker opens want more retries than that, so the budget dead-letters some
 * (`budget-exhausted`) and the replay has work to do.
 */
export const GAMEDAY_BUDGET = { ratio: 0.1, minAllowance: 2, windowMs: 60_000 } as const;

/** The fleet breaker: opens after 10 failures in a row, probes once a second, one probe at a time. */
export const GAMEDAY_BREAKER: Partial<BreakerOptions> = {
  consecutiveFailures: 10,
  coolDownMs: 1_000,
  halfOpenProbes: 1,
  successesToClose: 1,
};
