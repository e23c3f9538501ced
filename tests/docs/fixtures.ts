/**
 * The data a documentation sample is run against, named by its marker (`<!-- sample: fixture=NAME -->`).
 * Each fixture writes what the sample's output shows, through the stores' public API, into the servers
 * the samples test started; details are the texts `decide` writes (see src/policy/decide.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import type { DeadLetterReason } from '../../src/policy/types.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import type { DeadLetterRecord } from '../../src/runtime/contracts.js';
import { exampleScenarioText } from '../../src/sim/scenario/example.js';
import { ROOT } from '../helpers/cli.js';

export interface FixtureContext {
  redis: Redis;
  /** The folder the sample's commands run in. */
  cwd: string;
}

export type Fixture = (ctx: FixtureContext) => Promise<void>;

/** Every fixture a sample may name. */
export const FIXTURES: Record<string, Fixture> = {
  /** `mail` with a little spent, `search` spent to its allowance with denials. */
  budgets: async ({ redis }) => {
    await withBudget(redis, async (budget) => {
      await spend(budget, 'mail', 30, 1);
      await spend(budget, 'search', 1000, 250);
    });
  },
  /** The example's `search` during its outage: the earned retries spent, then denials. */
  outage: async (ctx) => {
    await withBudget(ctx.redis, (budget) => spend(budget, 'search', 200, 60));
    await fileDeadLetters(ctx.redis, 'index', outageRecords(7));
  },
  /** The example after its outage: the dead letters, and a budget that no longer denies. */
  recovered: async ({ redis }) => {
    await fileDeadLetters(redis, 'index', outageRecords(7));
  },
  /** `mail` closed after one failure in 240 calls, `search` opened by a failure streak. */
  breakers: async ({ redis }) => {
    const breaker = new CircuitBreaker({ store: new RedisBreakerStore({ redis }), stateCacheMs: 0 });
    try {
      for (let i = 0; i < 240; i++) await outcome(breaker, 'mail', i === 100);
      for (let i = 0; i < 14; i++) await outcome(breaker, 'search', i >= 4);
    } finally {
      await breaker.close();
    }
  },
  /**
   * `openai` with 24 of its 25 slots taken, `crm` held by a 429's Retry-After for 4 minutes, `mail` paused
   * by alice for 30 minutes: what a worker process's exchanges and an operator leave in the flow store.
   */
  limits: async ({ redis }) => {
    const store = new RedisFlowStore({ redis });
    const exchange = (declared: { maxInFlight?: number; maxRatePerSecond?: number }, take: number) => ({
      holder: 'host-a:4242',
      declared,
      leaseMs: 600_000,
      give: [],
      renew: [],
      take: Array.from({ length: take }, (_, i) => ({ lease: `host-a:4242:${i}`, cost: 1 })),
      probes: 1,
      ramp: { slowStartMs: 30_000, floorPerSecond: 1 },
    });
    await store.exchangeLimits('openai', exchange({ maxInFlight: 25 }, 24));
    await store.exchangeLimits('crm', exchange({ maxRatePerSecond: 5 }, 0));
    await store.holdLimits('crm', 240_000, 'retry-after');
    await store.overrideLimits('mail', {
      paused: true,
      reason: 'vendor incident, 429s since 14:00',
      by: 'alice',
      expiresInMs: 1_800_000,
    });
  },
  /** Queue `index`: two `reindex` jobs the search budget refused, and one that search refused for good. */
  'dead-letters': async ({ redis }) => {
    const now = Date.now();
    await fileDeadLetters(redis, 'index', [
      record('doc-1187', 'reindex', 'budget-exhausted', 2, now - 724_000),
      record('doc-1188', 'reindex', 'budget-exhausted', 1, now - 723_000),
      record('doc-2001', 'reindex', 'permanent', 1, now - 304_000, 'http-422 is not retryable'),
    ]);
  },
  /** The config file sample of docs/api.md ("Config files"), written where the commands run. */
  config: async ({ cwd }) => {
    const page = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
    const start = page.indexOf('```yaml\n# stormguard.config.yaml\n');
    if (start === -1)
      throw new Error('fixture config: docs/api.md has no ```yaml block starting "# stormguard.config.yaml"');
    const body = page.slice(page.indexOf('\n', start) + 1, page.indexOf('\n```', start));
    writeFileSync(join(cwd, 'stormguard.config.yaml'), `${body}\n`);
  },
  /** The simulator's rate-limited API example (docs/simulator.md), as `--example rate-limited-api` prints it. */
  'rate-limited-api': async ({ cwd }) => {
    writeFileSync(join(cwd, 'api.yaml'), await exampleScenarioText('rate-limited-api'));
  },
};

async function withBudget(redis: Redis, use: (budget: RetryBudget) => Promise<void>): Promise<void> {
  const budget = new RetryBudget({ store: new RedisBudgetStore({ redis }) });
  try {
    await use(budget);
  } finally {
    await budget.close();
  }
}

/** Records `successes`, then asks for `retries` one after another (those past the allowance are denied). */
async function spend(
  budget: RetryBudget,
  dependency: string,
  successes: number,
  retries: number,
): Promise<void> {
  for (let i = 0; i < successes; i++) budget.recordSuccess(dependency);
  await budget.flush();
  for (let i = 0; i < retries; i++) await budget.trySpend(dependency);
}

async function outcome(breaker: CircuitBreaker, dependency: string, fails: boolean): Promise<void> {
  const admission = await breaker.acquire(dependency);
  if (!admission.allowed) return;
  if (fails) await breaker.recordFailure(dependency, admission);
  else await breaker.recordSuccess(dependency, admission);
}

function outageRecords(count: number): DeadLetterRecord[] {
  const now = Date.now();
  return Array.from({ length: count }, (_, i) =>
    record(String(600 + i), 'index', 'budget-exhausted', 1 + (i % 3), now - 18_000 + i * 100),
  );
}

function record(
  jobId: string,
  name: string,
  reason: DeadLetterReason,
  attemptsMade: number,
  deadLetteredAt: number,
  detail = 'the search retry budget is exhausted',
): DeadLetterRecord {
  return {
    queue: 'index',
    jobId,
    createdAt: deadLetteredAt - 60_000,
    name,
    data: { docId: jobId },
    opts: {},
    reason,
    detail,
    lastError: {
      name: 'Error',
      message: 'search answered 503',
      classification: {
        retryable: reason !== 'permanent',
        reason: reason === 'permanent' ? 'http-422' : 'http-503',
      },
    },
    attemptsMade,
    dependency: 'search',
    firstFailedAt: deadLetteredAt - 1_000,
    deadLetteredAt,
    replays: 0,
  };
}

async function fileDeadLetters(redis: Redis, queue: string, records: DeadLetterRecord[]): Promise<void> {
  const store = new RedisDeadLetterStore({ redis });
  await store.registerQueue(queue);
  for (const r of records) await store.file(r, { attempts: r.attemptsMade, deferrals: 0 }, 3_600_000);
}
