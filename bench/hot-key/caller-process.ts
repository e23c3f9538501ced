/**
 * One process of bench/hot-key: `callers` concurrent callers asking one dependency's retry budget for a
 * retry, one after another, for `seconds`. With `shared`, the process has one RetryBudget, as a deployed
 * worker does, and concurrent requests for the dependency share a store call; without, every caller has a
 * budget of its own, so each decision is its own round trip. Answers `done` with the decisions made (and how
 * many came from the degraded fallback rather than the store).
 *
 *   node --import tsx bench/hot-key/caller-process.ts '<target address JSON>'
 */
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { nowMs, reply, serve } from '../../tests/helpers/ipc-process.js';
import { connect, type TargetAddress } from '../redis-target.js';

/** What the parent asks one run to be. */
export interface HotKeyRun {
  dependency: string;
  callers: number;
  shared: boolean;
  /** When to start and stop asking (ms, as nowMs() counts them), so every process asks over the same span. */
  startAt: number;
  stopAt: number;
}

const address = JSON.parse(process.argv[2] ?? '') as TargetAddress;
const redis = connect(address);
const store = new RedisBudgetStore({ redis, prefix: 'app' });

function budget(): RetryBudget {
  // A floor far above what a run spends: every decision is a grant, the store's full write path. The store
  // gets 2 s before a call counts as failed, so a slow call is measured, not answered by the fallback.
  return new RetryBudget({ store, minAllowance: 1_000_000_000, timeoutMs: 2_000, log: false });
}

serve(async (message) => {
  if (message.type === 'exit') {
    redis.disconnect();
    process.exit(0);
  }
  if (message.type !== 'run') return;
  const run = message.run as HotKeyRun;
  const shared = run.shared ? budget() : undefined;
  const budgets = Array.from({ length: run.callers }, () => shared ?? budget());
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, run.startAt - nowMs())));
  let decisions = 0;
  let degraded = 0;
  await Promise.all(
    budgets.map(async (own) => {
      while (nowMs() < run.stopAt) {
        const result = await own.trySpend(run.dependency);
        decisions++;
        if (result.degraded) degraded++;
      }
    }),
  );
  const endedAt = nowMs();
  await Promise.all([...new Set(budgets)].map((b) => b.close()));
  reply({ type: 'done', decisions, degraded, endedAt });
});
reply({ type: 'up' });
