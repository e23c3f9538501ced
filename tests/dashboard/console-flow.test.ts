/**
 * The console's overview in Chromium shows, for a down dependency, the workers flow control holds paused
 * and the jobs it parked, as `stormguard dashboard --redis` reads them from the flow store: one worker
 * whose whole queue needs `search` (paused) and one whose queue mixes dependencies (its `search` jobs
 * parked), both real BullMQ workers on a real Redis.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { createWorker, type StormguardWorker } from '../../src/bullmq/worker.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';
import { ensureConsoleBuilt, launchChromium, type Running, startConsole } from './harness.js';

const PREFIX = 'sgflow';
const ARTIFACTS = fileURLToPath(new URL('../../artifacts/', import.meta.url));

describe('the console in Chromium shows what flow control holds for a down dependency', () => {
  let redis: TestRedis;
  let client: Redis;
  let browser: Browser;
  let consoleServer: Running & { url: string };
  const queues: Queue[] = [];
  const workers: StormguardWorker[] = [];

  beforeAll(async () => {
    await ensureConsoleBuilt();
    mkdirSync(ARTIFACTS, { recursive: true });
    redis = await TestRedis.start();
    client = new Redis({ ...redis.connection, maxRetriesPerRequest: null });
    [browser, consoleServer] = await Promise.all([
      launchChromium(),
      startConsole(['--redis', redis.url, '--prefix', PREFIX]),
    ]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all(workers.map((w) => w.close()));
    await Promise.all(queues.map((q) => q.close()));
    await consoleServer?.stop();
    client?.disconnect();
    await redis?.close();
  }, 60_000);

  /** A flow-controlled worker of `queue` whose every call to `search` fails (the dependency is down). */
  function downWorker(queue: string, options: { queueDependency?: string; name: string }) {
    const connection = { ...redis.connection, maxRetriesPerRequest: null };
    const worker = createWorker(
      queue,
      async (job, ctx) => {
        if (job.name === 'mail') return 'sent';
        await ctx.call('search', async () => {
          throw new TransientError('search is down (ECONNREFUSED)');
        });
        return 'indexed';
      },
      {
        connection,
        concurrency: 2,
        policy: definePolicy({ maxAttempts: 50, backoff: { type: 'fixed', delayMs: 100 }, maxAgeMs: '10m' }),
        dependencies: { index: 'search', crawl: 'search', mail: 'mail' },
        // Opens after two failures and stays open for the whole test (well within the jobs' maxAge, so
        // they wait for it rather than being dead-lettered).
        breaker: new CircuitBreaker({
          store: new RedisBreakerStore({ redis: client, prefix: PREFIX }),
          consecutiveFailures: 2,
          coolDownMs: 120_000,
        }),
        deadLetters: new RedisDeadLetterStore({ redis: client, prefix: PREFIX }),
        flowControl: {
          store: new RedisFlowStore({ redis: client, prefix: PREFIX }),
          stateCacheMs: 50,
          ...(options.queueDependency === undefined ? {} : { queueDependency: options.queueDependency }),
        },
        workerOptions: { name: options.name, drainDelay: 1 },
      },
    );
    workers.push(worker);
    const jobs = new Queue(queue, { connection });
    queues.push(jobs);
    return jobs;
  }

  it('the overview lists the paused worker and the parked jobs, and says the dependency needs attention', async () => {
    const index = downWorker('index', { queueDependency: 'search', name: 'indexer-1' });
    const mixed = downWorker('mixed', { name: 'mixed-1' });
    await index.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'index', data: { doc: i } })));
    const flow = new RedisFlowStore({ redis: client, prefix: PREFIX });
    await waitFor(
      async () => (await flow.pausedWorkers('search')).length === 1,
      20_000,
      'the index worker to pause',
    );
    await mixed.addBulk([
      ...Array.from({ length: 3 }, (_, i) => ({ name: 'crawl', data: { doc: i } })),
      { name: 'mail', data: {} },
    ]);
    await waitFor(async () => (await flow.parked('search', 'mixed')) === 3, 20_000, 'three jobs parked');

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${consoleServer.url}#/`);
    await expect
      .poll(() => page.locator('tr[data-dependency="search"] [data-field="flow"]').textContent(), {
        timeout: 15_000,
      })
      .toBe('1 paused / 3 parked');
    const attention = page.locator('ul.attention li', { hasText: 'search' });
    await expect.poll(() => attention.textContent(), { timeout: 10_000 }).toMatch(/1 worker paused/);
    expect(await attention.textContent()).toMatch(/3 jobs parked/);
    // The mail job of the mixed queue was not held: its dependency is healthy.
    await waitFor(async () => (await mixed.getCompletedCount()) === 1, 10_000, 'the mail job to complete');
    await page.screenshot({ path: `${ARTIFACTS}console-flow.png`, fullPage: true });
    await context.close();
  });
});
