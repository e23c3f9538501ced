import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisReplayRunStore } from '../../src/redis/replay-run-store.js';
import type { DeadLetterRecord, StoredDeadLetter } from '../../src/runtime/contracts.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';
import { ensureConsoleBuilt, launchChromium, type Running, startConsole, startWorker } from './harness.js';

const PREFIX = 'sg';
const QUEUE = 'index';
const TOKEN = 'console-test-token';
const XSS = '<img src=x onerror=alert(1)>';
/** What a script sends to read the console's API (a browser signs in instead). */
const AS_SCRIPT = { headers: { authorization: `Bearer ${TOKEN}` } };
/** Screenshots of each page, for people to look at (copied into docs/ by hand when the pages change). */
const ARTIFACTS = fileURLToPath(new URL('../../artifacts/', import.meta.url));

// One Redis, two worker processes, one console process and one browser for the whole file: each test
// leaves the fleet in a state the next one starts from (healthy → down → overridden).
describe('the console in Chromium, against real Redis and worker processes', () => {
  let redis: TestRedis;
  let client: Redis;
  let browser: Browser;
  let jobs: Queue;
  const workers: Running[] = [];
  let consoleServer: Running & { url: string };

  beforeAll(async () => {
    await ensureConsoleBuilt();
    mkdirSync(ARTIFACTS, { recursive: true });
    redis = await TestRedis.start();
    client = new Redis(redis.connection);
    jobs = new Queue(QUEUE, { connection: redis.connection });
    [browser, workers[0], workers[1], consoleServer] = await Promise.all([
      launchChromium(),
      startWorker(redis.port, QUEUE, PREFIX),
      startWorker(redis.port, QUEUE, PREFIX),
      startConsole(['--redis', redis.url, '--prefix', PREFIX], { STORMGUARD_DASHBOARD_TOKEN: TOKEN }),
    ]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([...workers.map((w) => w.stop()), consoleServer?.stop()]);
    await jobs?.close();
    client?.disconnect();
    await redis?.close();
  });

  /** A page of the console, signed in as a user does: the token typed once into the sign-in page. */
  async function open(path: string, withToken = true): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on('pageerror', (error) => console.error('page error:', error.message));
    page.on('dialog', (dialog) => {
      throw new Error(`unexpected dialog: ${dialog.message()}`);
    });
    if (withToken) {
      await page.goto(consoleServer.url);
      await page.getByLabel('Token').fill(TOKEN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('Actions enabled').waitFor();
    }
    await page.goto(`${consoleServer.url}${path}`);
    return page;
  }

  /** The search row's figures, read in one step so a live update cannot land between two of them. */
  const searchRow = (page: Page) =>
    page.locator('tr[data-dependency="search"]').evaluate((tr) => {
      const field = (name: string) => tr.querySelector(`[data-field="${name}"]`)?.textContent ?? '';
      return {
        allowance: field('allowance'),
        spent: field('spent'),
        denied: field('denied'),
        headroom: field('headroom'),
      };
    });

  it('the overview shows a budget draining live while its dependency is down', async () => {
    // Healthy first: successes give the dependency its budget state. 20 successes at ratio 0.1 are under
    // the fixture's floor, so the allowance is its minAllowance: 10 retries.
    await jobs.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'reindex', data: { doc: i } })));
    await waitFor(async () => Number(await client.get('fixture:calls:search')) >= 20, 15_000, '20 calls');
    const page = await open('#/');
    await expect
      .poll(() => searchRow(page), { timeout: 10_000 })
      .toMatchObject({ spent: '0', allowance: '10' });

    // The drain goes in two steps the test waits on, and the same page, never reloaded, shows each.
    // First one job: its 4 attempts spend 3 retries, then it is dead-lettered for its attempts.
    await client.set('fixture:down:search', '1');
    const deadLetters = new RedisDeadLetterStore({ redis: client, prefix: PREFIX });
    const one = await jobs.add('reindex', { doc: 100 });
    await waitFor(
      async () =>
        (await deadLetters.list(QUEUE, { reason: 'max-attempts', limit: 100 })).records.some(
          (r) => r.jobId === one.id,
        ),
      20_000,
      'the first job to use its attempts',
    );
    await expect
      .poll(() => searchRow(page), { timeout: 10_000 })
      .toEqual({ allowance: '10', spent: '3', denied: '0', headroom: '7' });

    // Then enough jobs to spend the rest: spent reaches the allowance, further retries are denied and
    // those jobs are dead-lettered.
    await jobs.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'reindex', data: { doc: 101 + i } })));
    let last = await searchRow(page);
    await waitFor(
      async () => {
        last = await searchRow(page);
        return last.headroom === '0' && last.denied !== '0';
      },
      30_000,
      'the overview to show no headroom and denials',
      100,
    );
    expect(last).toMatchObject({ allowance: '10', spent: '10', headroom: '0' });
    await expect
      .poll(() => page.locator('ul.attention li').first().textContent(), { timeout: 10_000 })
      .toMatch(/^search: .*retries denied/);
    // The dead letters now include jobs refused a retry, besides the first one's.
    await expect
      .poll(
        () => page.locator('tr[data-dependency="search"] td:has([data-field="dead-letters"])').textContent(),
        {
          timeout: 10_000,
        },
      )
      .toMatch(/budget-exhausted [1-9]/);
    await page.screenshot({ path: `${ARTIFACTS}console-overview.png`, fullPage: true });
    await page.context().close();
  });

  it("a dead letter's detail shows every attempt the workers made, with its decision and delay", async () => {
    // A job the budget granted one retry (after 100 ms, the fixture's backoff) and then denied the next.
    const store = new RedisDeadLetterStore({ redis: client, prefix: PREFIX });
    let filed: StoredDeadLetter | undefined;
    await waitFor(
      async () => {
        const { records } = await store.list(QUEUE, { reason: 'budget-exhausted', limit: 100 });
        filed = records.find((r) => (r.history?.length ?? 0) >= 2);
        return filed !== undefined;
      },
      20_000,
      'a dead letter with two attempts',
    );
    const record = filed as StoredDeadLetter;
    const page = await open(`#/dead-letters/${QUEUE}/${record.id}`);
    const attempts = page.getByRole('table', { name: 'Attempts' });
    await attempts.waitFor();
    const rows = attempts.locator('tbody tr');
    expect(await rows.count()).toBe(record.history?.length);
    const cells = async (row: number) =>
      (await rows.nth(row).locator('th, td').allTextContents()).map((t) => t.trim());
    const first = await cells(0);
    expect(first[0]).toBe('1');
    expect(first.slice(2, 6)).toEqual([
      'search',
      'TransientError: search is down (ECONNREFUSED)',
      'transient-error (retryable)',
      'retry (backoff)',
    ]);
    // The fixture's policy jitters its 100 ms backoff (full jitter: anywhere from 0 to 100 ms).
    expect(first[6]).toMatch(/^(\d|[1-9]\d|100) ms$/);
    const last = await cells((record.history?.length ?? 0) - 1);
    expect(last.slice(2)).toEqual([
      'search',
      'TransientError: search is down (ECONNREFUSED)',
      'transient-error (retryable)',
      'dead-letter (budget-exhausted)',
      '–',
    ]);
    expect(await attempts.locator('caption').textContent()).toBe('Every attempt, oldest first.');
    await page.screenshot({ path: `${ARTIFACTS}console-record.png`, fullPage: true });
    await page.context().close();
  });

  it('forcing the breaker open from the breakers page stops the workers calling the dependency, and is audited', async () => {
    // Start from a quiet queue: nothing in flight that could still call.
    await waitFor(
      async () => {
        const c = await jobs.getJobCounts('waiting', 'active', 'delayed');
        return c.waiting === 0 && c.active === 0 && c.delayed === 0;
      },
      20_000,
      'the queue to settle',
    );
    const page = await open('#/breakers');
    const row = page.locator('tr[data-dependency="search"]');
    await row.getByLabel('Action on search').selectOption({ label: 'Force open' });
    await row.getByLabel('Reason for the search override').fill('search reindexing <script>');
    await row.getByRole('button', { name: 'Apply' }).click();
    await expect
      .poll(() => row.locator('[data-field="state"]').textContent(), { timeout: 10_000 })
      .toBe('open');
    expect(await row.locator('[data-field="override"]').textContent()).toBe(
      'forced open by anonymous: search reindexing <script>',
    );
    await page.screenshot({ path: `${ARTIFACTS}console-breakers.png`, fullPage: true });
    // Workers honour an override within their breaker's state cache (100 ms in the fixture).
    const appliedAt = Date.now();
    await waitFor(() => Date.now() > appliedAt + 300, 1_000, 'the state cache time to pass');
    const callsBefore = Number(await client.get('fixture:calls:search'));
    await jobs.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'reindex', data: { doc: 500 + i } })));
    await waitFor(
      async () => {
        const c = await jobs.getJobCounts('waiting', 'active');
        return c.waiting === 0 && c.active === 0;
      },
      20_000,
      'the workers to take the 10 jobs',
    );
    expect(Number(await client.get('fixture:calls:search'))).toBe(callsBefore);

    await page.goto(`${consoleServer.url}#/audit`);
    const entry = page.locator('table[aria-label="Audit log"] tbody tr').first();
    await entry.waitFor();
    expect(await entry.locator('[data-field="action"]').textContent()).toBe('breaker.force-open');
    await page.screenshot({ path: `${ARTIFACTS}console-audit.png`, fullPage: true });
    expect(await entry.locator('[data-field="target"]').textContent()).toBe('search');
    expect(await entry.locator('[data-field="reason"]').textContent()).toBe('search reindexing <script>');

    // Reset from the page, and the dependency comes back: the held jobs reach it again.
    await client.del('fixture:down:search');
    await page.goto(`${consoleServer.url}#/breakers`);
    await row.getByLabel('Action on search').selectOption({ label: 'Reset (lift the override)' });
    await row.getByLabel('Reason for the search override').fill('reindex done');
    await row.getByRole('button', { name: 'Apply' }).click();
    // A reset lifts the override (and may clear the breaker's state: then the row goes).
    await waitFor(
      async () => {
        const { breakers } = (await (await fetch(`${consoleServer.url}api/breakers`, AS_SCRIPT)).json()) as {
          breakers: { dependency: string; override?: unknown }[];
        };
        return !breakers.some((b) => b.dependency === 'search' && b.override);
      },
      10_000,
      'the override to be lifted',
    );
    await expect.poll(() => page.getByText('forced open by').count(), { timeout: 10_000 }).toBe(0);
    await page.context().close();
  });

  it('a bulk replay started from the page moves every record once, though the page closes and the console is killed half-way', async () => {
    const store = new RedisDeadLetterStore({ redis: client, prefix: PREFIX });
    const N = 40;
    for (let i = 0; i < N; i++)
      await store.file(
        {
          queue: QUEUE,
          jobId: `bulk-${i}`,
          createdAt: 1_700_000_000_000 + i,
          name: 'bulk',
          data: { doc: `bulk-${i}` },
          opts: {},
          reason: 'max-attempts',
          detail: '4 of 4 attempts used',
          lastError: {
            name: 'Error',
            message: 'ETIMEDOUT',
            classification: { retryable: true, reason: 'network' },
          },
          attemptsMade: 4,
          dependency: 'search',
          deadLetteredAt: 1_700_000_100_000 + i,
          replays: 0,
        },
        { attempts: 4, deferrals: 0 },
        60_000,
      );
    const page = await open(`#/replay/${QUEUE}?name=bulk`);
    await page.getByLabel('Jobs per second').fill('10');
    await page.getByLabel('Only while the dependency is healthy').uncheck();
    await page.getByRole('button', { name: 'Preview (dry run)' }).click();
    await expect
      .poll(() => page.getByTestId('preview-total').textContent())
      .toMatch(/^40 records in the snapshot; about 4s at 10\/s/);
    // Records dead-lettered after the preview are not in its snapshot.
    await store.file(
      {
        queue: QUEUE,
        jobId: 'bulk-late',
        createdAt: 1_700_000_000_999,
        name: 'bulk',
        data: { doc: 'bulk-late' },
        opts: {},
        reason: 'max-attempts',
        detail: '4 of 4 attempts used',
        lastError: {
          name: 'Error',
          message: 'ETIMEDOUT',
          classification: { retryable: true, reason: 'network' },
        },
        attemptsMade: 4,
        dependency: 'search',
        deadLetteredAt: 1_700_000_100_999,
        replays: 0,
      },
      { attempts: 4, deferrals: 0 },
      60_000,
    );
    await page.getByRole('button', { name: 'Start replay of 40 records' }).click();
    await page.getByTestId('run-state').waitFor();
    const runId = decodeURIComponent(new URL(page.url()).hash.split('/').at(-1) ?? '');
    const run = async (url: string) =>
      (await (await fetch(`${url}api/replays/${runId}`, AS_SCRIPT)).json()) as {
        status: string;
        moved: number;
        skipped: number;
        failures: unknown[];
      };
    await waitFor(async () => (await run(consoleServer.url)).moved >= 10, 15_000, 'ten records moved');
    await page.context().close();
    await consoleServer.stop('SIGKILL');
    // The killed console still holds the run: the next one goes on once its lease lapses.
    const halfway = await new RedisReplayRunStore({ redis: client, prefix: PREFIX }).getRun(runId);
    expect(halfway?.status).toBe('running');
    expect(halfway?.moved).toBeLessThan(N);

    consoleServer = await startConsole(['--redis', redis.url, '--prefix', PREFIX], {
      STORMGUARD_DASHBOARD_TOKEN: TOKEN,
    });
    const again = await open(`#/replay/${QUEUE}/${runId}`);
    await again.locator('[data-testid="run-state"][data-state="done"]').waitFor({ timeout: 40_000 });
    const done = await run(consoleServer.url);
    await again.screenshot({ path: `${ARTIFACTS}console-bulk-replay.png`, fullPage: true });
    expect(done.failures).toEqual([]);
    expect(done.moved + done.skipped).toBe(N);

    // Every record went back exactly once, the late one stayed in the store, and the workers ran them.
    await waitFor(
      async () => (await jobs.getJobs(['completed'])).filter((j) => j.name === 'bulk').length >= N,
      20_000,
      'the workers to complete the replayed jobs',
    );
    const replayed = (await jobs.getJobs(['completed', 'waiting', 'active', 'delayed', 'failed'])).filter(
      (j) => j.name === 'bulk',
    );
    expect(replayed.map((j) => (j.data as { doc: string }).doc).sort()).toEqual(
      Array.from({ length: N }, (_, i) => `bulk-${i}`).sort(),
    );
    const left = await store.list(QUEUE, { name: 'bulk', limit: 100 });
    expect(left.records.map((r) => r.jobId)).toEqual(['bulk-late']);
    await again.context().close();
  });

  it('a record whose data and error are HTML renders them as text', async () => {
    const store = new RedisDeadLetterStore({ redis: client, prefix: PREFIX });
    const record: DeadLetterRecord = {
      queue: 'xss',
      jobId: 'x1',
      createdAt: 1_700_000_000_000,
      name: '<b>name</b>',
      data: XSS,
      opts: {},
      reason: 'permanent',
      detail: XSS,
      lastError: { name: 'Error', message: XSS, classification: { retryable: false, reason: 'permanent' } },
      attemptsMade: 1,
      dependency: 'search',
      deadLetteredAt: 1_700_000_001_000,
      replays: 0,
      history: [
        {
          attempt: 1,
          at: 1_700_000_001_000,
          dependency: 'search',
          error: { name: 'Error', message: XSS },
          classification: { retryable: false, reason: 'permanent' },
          decision: 'dead-letter',
          cause: 'permanent',
        },
      ],
    };
    const { id } = await store.file(record, { attempts: 1, deferrals: 0 }, 60_000);
    const page = await open('#/dead-letters/xss');
    await page.locator(`tr[data-record="${id}"]`).waitFor();
    await page.screenshot({ path: `${ARTIFACTS}console-dead-letters.png`, fullPage: true });
    expect(await page.locator(`tr[data-record="${id}"] td.error-text`).textContent()).toBe(XSS);
    await page.goto(`${consoleServer.url}#/dead-letters/xss/${id}`);
    await page.locator('[data-testid="record-data"]').waitFor();
    expect(await page.locator('[data-testid="record-data"]').textContent()).toBe(JSON.stringify(XSS));
    expect(
      await page.getByRole('table', { name: 'Attempts' }).locator('tbody td.error-text').textContent(),
    ).toBe(`Error: ${XSS}`);
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('b').count()).toBe(0);
    await page.context().close();
  });

  it('actions without the token, without the CSRF token, or on a read-only console are refused', async () => {
    const store = new RedisDeadLetterStore({ redis: client, prefix: PREFIX });
    const [first] = (await store.list(QUEUE, { limit: 1 })).records;
    expect(first).toBeDefined();
    const target = `${consoleServer.url}api/queues/${QUEUE}/records/${first?.id}/delete`;
    const session = await fetch(`${consoleServer.url}api/session`, AS_SCRIPT);
    const csrf = ((await session.json()) as { csrf: string }).csrf;
    const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0] ?? '';

    const noToken = await fetch(target, { method: 'POST', headers: { 'x-stormguard-csrf': csrf, cookie } });
    expect(noToken.status).toBe(401);
    const wrongToken = await fetch(target, {
      method: 'POST',
      headers: { authorization: 'Bearer wrong-token', 'x-stormguard-csrf': csrf, cookie },
    });
    expect(wrongToken.status).toBe(401);
    const noCsrf = await fetch(target, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(noCsrf.status).toBe(403);
    const crossSite = await fetch(target, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'x-stormguard-csrf': csrf,
        cookie,
        'sec-fetch-site': 'cross-site',
      },
    });
    expect(crossSite.status).toBe(403);
    expect(await store.get(QUEUE, first?.id ?? '')).toBeDefined();

    const readOnly = await startConsole(['--redis', redis.url, '--prefix', PREFIX]);
    try {
      const s = await fetch(`${readOnly.url}api/session`);
      const body = (await s.json()) as { writable: boolean; csrf: string };
      expect(body.writable).toBe(false);
      const refused = await fetch(`${readOnly.url}api/queues/${QUEUE}/records/${first?.id}/delete`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'x-stormguard-csrf': body.csrf,
          cookie: (s.headers.get('set-cookie') ?? '').split(';')[0] ?? '',
        },
      });
      expect(refused.status).toBe(403);
      // The page offers no action either.
      const page = await browser.newPage();
      await page.goto(`${readOnly.url}#/dead-letters/${QUEUE}/${first?.id}`);
      await page.getByText('Read-only: started without a token').waitFor();
      expect(await page.getByRole('button', { name: 'Delete this record' }).isDisabled()).toBe(true);
      await page.close();
    } finally {
      await readOnly.stop();
    }
    expect(await store.get(QUEUE, first?.id ?? '')).toBeDefined();

    // With both, the same request goes through, and is in the audit log.
    const done = await fetch(target, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'x-stormguard-csrf': csrf, cookie },
    });
    expect(done.status).toBe(200);
    expect(await store.get(QUEUE, first?.id ?? '')).toBeUndefined();
    const audit = (await (await fetch(`${consoleServer.url}api/audit`, AS_SCRIPT)).json()) as {
      entries: { action: string; target: string; by: string }[];
    };
    expect(audit.entries[0]).toMatchObject({
      action: 'dead-letter.delete',
      target: `${QUEUE}/${first?.id}`,
      by: 'anonymous',
    });
  });
});
