/**
 * The console's Limits page in Chromium, as `stormguard dashboard --redis` serves it, over a real BullMQ
 * worker with fleet-wide limits on a real Redis: the page shows calls in flight against the cap and a
 * Retry-After hold; pausing a dependency from the page stops the worker's calls to it (its jobs are held
 * without using attempts) and resuming brings them back; reset lifts a hold; every action is audited, needs
 * the token and passes the CSRF check, and the text an operator typed is shown as text.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type StormguardWorker } from '../../src/bullmq/worker.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisAuditLog } from '../../src/redis/audit-log.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';
import { ensureConsoleBuilt, launchChromium, type Running, startConsole } from './harness.js';

const PREFIX = 'sglimits';
const QUEUE = 'summarise';
const TOKEN = 'console-limits-token';
const XSS = '<img src=x onerror=alert(1)>';
const AS_SCRIPT = { authorization: `Bearer ${TOKEN}` };
const ARTIFACTS = fileURLToPath(new URL('../../artifacts/', import.meta.url));

describe('the Limits page in Chromium, over a worker with fleet-wide limits on real Redis', () => {
  let redis: TestRedis;
  let client: Redis;
  let browser: Browser;
  let consoleServer: Running & { url: string };
  let jobs: Queue;
  let worker: StormguardWorker;
  let calls = 0;
  let held = 0;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    mkdirSync(ARTIFACTS, { recursive: true });
    redis = await TestRedis.start();
    client = new Redis({ ...redis.connection, maxRetriesPerRequest: null });
    const connection = { ...redis.connection, maxRetriesPerRequest: null };
    jobs = new Queue(QUEUE, { connection });
    worker = createWorker(
      QUEUE,
      async (_job, ctx) => {
        await ctx.call('openai', async () => {
          calls++;
        });
        return 'summarised';
      },
      {
        connection,
        concurrency: 4,
        policy: definePolicy({ maxAttempts: 3, backoff: { type: 'fixed', delayMs: 100 }, maxAgeMs: '10m' }),
        limits: { openai: { maxInFlight: 25 } },
        limitsOptions: {
          store: new RedisFlowStore({ redis: client, prefix: PREFIX }),
          stateCacheMs: 50,
          maxPaceWaitMs: 100,
        },
        workerOptions: { drainDelay: 1 },
      },
    );
    worker.events.on('limit-wait', (e) => {
      if (e.outcome === 'held') held++;
    });
    [browser, consoleServer] = await Promise.all([
      launchChromium(),
      startConsole(['--redis', redis.url, '--prefix', PREFIX], { STORMGUARD_DASHBOARD_TOKEN: TOKEN }),
    ]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await worker?.close();
    await jobs?.close();
    await consoleServer?.stop();
    client?.disconnect();
    await redis?.close();
  }, 60_000);

  async function open(path: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on('dialog', (dialog) => {
      throw new Error(`unexpected dialog: ${dialog.message()}`);
    });
    await page.goto(consoleServer.url);
    await page.getByLabel('Token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Actions enabled').waitFor();
    await page.goto(`${consoleServer.url}${path}`);
    return page;
  }

  const completed = async (n: number, what: string) =>
    waitFor(async () => (await jobs.getCompletedCount()) === n, 20_000, what);

  it('shows in flight against the cap and a hold; pause from the page stops the calls, resume brings them back; both audited', async () => {
    await jobs.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'summarise', data: { doc: i } })));
    await completed(5, 'the first five jobs');
    expect(calls).toBe(5);
    // crm: held by a 429's Retry-After for 10 minutes, as another worker would have recorded it.
    await new RedisFlowStore({ redis: client, prefix: PREFIX }).holdLimits('crm', 600_000, 'retry-after');

    const page = await open('#/limits');
    const openai = page.locator('tr[data-dependency="openai"]');
    const crm = page.locator('tr[data-dependency="crm"]');
    await expect.poll(() => openai.locator('[data-field="in-flight"]').textContent()).toBe('0/25 in flight');
    expect(await openai.locator('[data-field="rate"]').textContent()).toBe('no rate limit');
    expect(await crm.locator('[data-field="hold"]').textContent()).toMatch(
      /^held until \d\d:\d\d:\d\d UTC by Retry-After \(in (9m \d+s|10m 0s)\)$/,
    );

    // Pause openai for 30 minutes, with a reason that is markup.
    await openai.getByLabel('Action on openai').selectOption({ label: 'Pause' });
    await openai.getByLabel('Expires after, for openai').fill('30m');
    await openai.getByLabel('Reason for the openai change').fill(XSS);
    await openai.getByRole('button', { name: 'Apply' }).click();
    await expect
      .poll(() => openai.locator('[data-field="override"]').textContent(), { timeout: 10_000 })
      .toMatch(
        /^paused by anonymous: <img src=x onerror=alert\(1\)> \(expires \d\d:\d\d:\d\d UTC, in (29m \d+s|30m 0s)\)$/,
      );
    expect(await page.locator('img[src="x"]').count()).toBe(0);

    // Jobs added now are held without calling openai (and without using an attempt).
    await waitFor(
      async () =>
        (await new RedisFlowStore({ redis: client, prefix: PREFIX }).limitState('openai')).override
          ?.paused === true,
      5_000,
      'the pause in the store',
    );
    await jobs.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'summarise', data: { doc: 10 + i } })));
    await waitFor(() => held >= 5, 20_000, 'the five jobs to be held');
    expect(calls).toBe(5);
    expect(await jobs.getCompletedCount()).toBe(5);

    // The overview says why openai needs attention, and shows its limits.
    await page.goto(`${consoleServer.url}#/`);
    const attention = page.locator('ul.attention li', { hasText: 'openai' });
    await expect.poll(() => attention.textContent()).toMatch(/^openai: paused by anonymous: <img src=x/);
    expect(await page.locator('tr[data-dependency="crm"] [data-field="limits"]').textContent()).toMatch(
      /^0 in flight \(no cap\) · no rate limit · held until \d\d:\d\d:\d\d UTC by Retry-After/,
    );
    await page.screenshot({ path: `${ARTIFACTS}console-limits-overview.png`, fullPage: true });

    // Resume: the held jobs call openai and complete.
    await page.goto(`${consoleServer.url}#/limits`);
    await openai.getByLabel('Action on openai').selectOption({ label: 'Resume' });
    await openai.getByLabel('Reason for the openai change').fill('vendor incident over');
    await openai.getByRole('button', { name: 'Apply' }).click();
    await completed(10, 'the held jobs to complete after the resume');
    expect(calls).toBe(10);
    await expect.poll(() => openai.locator('[data-field="override"]').textContent()).toBe('–');

    // Reset crm: its hold goes.
    await crm.getByLabel('Action on crm').selectOption({ label: 'Reset (back to code)' });
    await crm.getByLabel('Reason for the crm change').fill('vendor says it is back');
    await crm.getByRole('button', { name: 'Apply' }).click();
    await waitFor(
      async () =>
        (await new RedisFlowStore({ redis: client, prefix: PREFIX }).limitState('crm')).hold === undefined,
      10_000,
      'the crm hold to be lifted',
    );
    await page.screenshot({ path: `${ARTIFACTS}console-limits.png`, fullPage: true });
    await page.context().close();

    const { entries } = await new RedisAuditLog({ redis: client, prefix: PREFIX }).list({ limit: 10 });
    expect(entries.map((e) => [e.action, e.target, e.by, e.reason])).toEqual([
      ['limits.reset', 'crm', 'anonymous', 'vendor says it is back'],
      ['limits.resume', 'openai', 'anonymous', 'vendor incident over'],
      ['limits.pause', 'openai', 'anonymous', XSS],
    ]);
  });

  it('the API lists the limits to a script with the token, refuses an action without the CSRF check, and names bad input', async () => {
    const listed = await fetch(`${consoleServer.url}api/limits`, { headers: AS_SCRIPT });
    expect(listed.status).toBe(200);
    const body = (await listed.json()) as { limits: { dependency: string }[]; actions: string[] };
    expect(body.limits.map((l) => l.dependency)).toEqual(['openai']);
    expect(body.actions).toEqual(['set', 'pause', 'resume', 'reset']);

    expect((await fetch(`${consoleServer.url}api/limits`)).status).toBe(401);
    const noCsrf = await fetch(`${consoleServer.url}api/limits/openai`, {
      method: 'POST',
      headers: { ...AS_SCRIPT, 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'pause', reason: 'x' }),
    });
    expect(noCsrf.status).toBe(403);

    // With a session's CSRF token: a set without a limit is bad input, named.
    const session = await fetch(`${consoleServer.url}api/session`, { headers: AS_SCRIPT });
    const { csrf } = (await session.json()) as { csrf: string };
    const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const post = (payload: unknown) =>
      fetch(`${consoleServer.url}api/limits/openai`, {
        method: 'POST',
        headers: {
          ...AS_SCRIPT,
          cookie,
          'content-type': 'application/json',
          'x-stormguard-csrf': csrf,
        },
        body: JSON.stringify(payload),
      });
    const bad = await post({ action: 'set', reason: 'more' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(
      /^set: give maxInFlight and\/or maxRatePerSecond/,
    );
    const set = await post({ action: 'set', reason: 'more', maxInFlight: '40', expires: '2h' });
    expect(set.status).toBe(200);
    const answer = (await set.json()) as {
      limits: { effective: unknown; override: { expiresInMs: number } };
    };
    expect(answer.limits.effective).toEqual({ maxInFlight: 40 });
    expect(answer.limits.override.expiresInMs).toBe(7_200_000);
  });
});
