import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import type { DeadLetterRecord } from '../../src/runtime/contracts.js';
import { cli, ensureCliBuilt, spawnCli } from '../helpers/cli.js';
import { freePort, TestRedis, waitFor } from '../helpers/redis-server.js';
import { parseExposition, type Sample, sampleValue } from './exposition.js';

const PREFIX = 'cli-metrics';

function record(jobId: string): DeadLetterRecord {
  return {
    jobId,
    queue: 'index',
    name: 'index-document',
    data: { doc: jobId },
    opts: {},
    reason: 'budget-exhausted',
    detail: 'budget for search exhausted',
    lastError: { name: 'Error', message: 'down', classification: { retryable: true, reason: 'unknown' } },
    attemptsMade: 1,
    dependency: 'search',
    createdAt: 0,
    deadLetteredAt: 0,
    replays: 0,
  };
}

/** Starts `stormguard metrics serve` and resolves with the child and the URL it printed. */
async function serve(redisUrl: string): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const port = await freePort();
  const child = spawnCli(
    [
      'metrics',
      'serve',
      '--redis',
      redisUrl,
      '--prefix',
      PREFIX,
      '--queue',
      'index',
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--timeout',
      '500ms',
      '--json',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  await waitFor(
    () => stdout.includes('}') || child.exitCode !== null,
    10_000,
    'metrics serve to print its URL',
  );
  if (child.exitCode !== null) throw new Error(`metrics serve exited ${child.exitCode}: ${stderr}`);
  const { url } = JSON.parse(stdout) as { url: string };
  expect(url).toBe(`http://127.0.0.1:${port}/metrics`);
  return { child, url, stderr: () => stderr };
}

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

describe('stormguard metrics serve (built binary)', () => {
  let server: TestRedis;
  let redis: Redis;

  beforeAll(async () => {
    await ensureCliBuilt('metrics');
    server = await TestRedis.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    redis.on('error', () => {});
    // The fleet's state, as workers would leave it: 10 successes, ratio 0.5 -> allowance 5; 7 asks -> 5 granted, 2 denied.
    const budget = new RetryBudget({
      store: new RedisBudgetStore({ redis, prefix: PREFIX }),
      ratio: 0.5,
      minAllowance: 2,
      windowMs: 60_000,
    });
    budget.recordSuccess('search', 10);
    await budget.flush();
    for (let i = 0; i < 7; i++) await budget.trySpend('search');
    await budget.close();
    const breaker = new CircuitBreaker({
      store: new RedisBreakerStore({ redis, prefix: PREFIX }),
      consecutiveFailures: 2,
      coolDownMs: 600_000,
    });
    await breaker.recordFailure('mail');
    await breaker.recordFailure('mail');
    const dlq = deadLetterQueue('index', { store: new RedisDeadLetterStore({ redis, prefix: PREFIX }) });
    for (const id of ['a', 'b', 'c']) await dlq.add(record(id));
    await dlq.close();
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.close();
  });

  it("exports the fleet's budgets, breakers and dead-letter depth, and stops cleanly on SIGTERM", async () => {
    const { child, url } = await serve(server.url);
    try {
      const s = await scrape(url);
      const search = { dependency: 'search' };
      expect(sampleValue(s, 'stormguard_budget_allowance', search)).toBe(5);
      expect(sampleValue(s, 'stormguard_budget_spent', search)).toBe(5);
      expect(sampleValue(s, 'stormguard_budget_denied', search)).toBe(2);
      expect(sampleValue(s, 'stormguard_budget_successes', search)).toBe(10);
      expect(sampleValue(s, 'stormguard_budget_ratio', search)).toBe(0.5);
      expect(sampleValue(s, 'stormguard_budget_min_allowance', search)).toBe(2);
      expect(sampleValue(s, 'stormguard_budget_window_seconds', search)).toBe(60);
      expect(sampleValue(s, 'stormguard_budget_degraded', search)).toBe(0);
      expect(sampleValue(s, 'stormguard_breaker_state', { dependency: 'mail', state: 'open' })).toBe(1);
      expect(
        sampleValue(s, 'stormguard_breaker_state', { dependency: 'search', state: 'closed' }),
      ).toBeUndefined();
      expect(sampleValue(s, 'stormguard_dead_letter_queue_depth', { queue: 'index' })).toBe(3);
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  });

  it('reports the budget as degraded while Redis is down, and recovers when it returns', async () => {
    const { child, url } = await serve(server.url);
    try {
      expect(sampleValue(await scrape(url), 'stormguard_budget_degraded', { dependency: 'search' })).toBe(0);
      await server.stop();
      const down = await scrape(url);
      expect(sampleValue(down, 'stormguard_budget_degraded', { dependency: 'search' })).toBe(1);
      expect(sampleValue(down, 'stormguard_budget_allowance', { dependency: 'search' })).toBeUndefined();
      expect(sampleValue(down, 'stormguard_budget_state_errors_total')).toBeGreaterThan(0);
      await server.restart();
      // A fresh Redis holds no budget any more: the exporter answers again, with nothing degraded.
      await waitFor(
        async () =>
          sampleValue(await scrape(url), 'stormguard_budget_degraded', { dependency: 'search' }) !== 1,
        10_000,
        'the exporter to reconnect to Redis',
      );
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    }
  });

  it('rejects bad input with exit code 2 and a one-line message', async () => {
    const bad = await cli('metrics', 'serve', '--port', '99999');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      'stormguard: --port: "99999" is not a port; use a whole number from 0 to 65535\n',
    );
    const url = await cli('metrics', 'serve', '--redis', 'http://x');
    expect(url.code).toBe(2);
    expect(url.stderr).toContain('--redis: "http://x" must start with redis://');
  });
});
