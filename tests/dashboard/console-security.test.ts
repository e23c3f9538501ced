/**
 * What a page on another site can get from `stormguard dashboard`, in Chromium: nothing through a name it
 * points at the console (DNS rebinding), nothing from another origin though the browser is signed in, and
 * nothing at all before signing in when the console has a token. Then the CLI's side: where the token
 * comes from, and the names the console answers for. Real Redis and console processes.
 */

import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { cli } from '../helpers/cli.js';
import { TestRedis } from '../helpers/redis-server.js';
import { ensureConsoleBuilt, launchChromium, type Running, startConsole } from './harness.js';

const PREFIX = 'sec';
const TOKEN = 'console-security-token';
/** What the dead letter's data holds: no refused request may carry it back. */
const SECRET = '4111 1111 1111 1111';

type Console = Running & { url: string; port: number; stderr(): string };

/** A GET with exactly these headers (node:http: the Host is what the test says). */
function get(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, setHost: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`${path}: no answer in 10 s`)));
    req.on('error', reject);
    req.end();
  });
}

describe('the console in Chromium: another site reads nothing', () => {
  let redis: TestRedis;
  let client: Redis;
  let browser: Browser;
  let readOnly: Console;
  let guarded: Console;
  let recordId: string;
  const contexts: BrowserContext[] = [];
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    await ensureConsoleBuilt();
    redis = await TestRedis.start();
    client = new Redis(redis.connection);
    const store = new RedisDeadLetterStore({ redis: client, prefix: PREFIX });
    recordId = (
      await store.file(
        sampleDeadLetter('card-1', { data: { card: SECRET } }),
        { attempts: 5, deferrals: 0 },
        60_000,
      )
    ).id;
    [browser, readOnly, guarded] = await Promise.all([
      launchChromium(),
      startConsole(['--redis', redis.url, '--prefix', PREFIX]),
      startConsole(['--redis', redis.url, '--prefix', PREFIX], { STORMGUARD_DASHBOARD_TOKEN: TOKEN }),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(contexts.map((c) => c.close()));
    await Promise.all(closers.map((close) => close()));
    await browser?.close();
    await Promise.all([readOnly?.stop(), guarded?.stop()]);
    client?.disconnect();
    await redis?.close();
  });

  async function newContext(options: Parameters<Browser['newContext']>[0] = {}): Promise<BrowserContext> {
    const context = await browser.newContext(options);
    context.setDefaultTimeout(10_000);
    contexts.push(context);
    return context;
  }

  it('a page whose own name points at the console (DNS rebinding) gets 403 for the page, the API and the live stream', async () => {
    for (const target of [readOnly, guarded]) {
      // Every name this browser opens reaches the console, as a name rebound to 127.0.0.1 does. The
      // attacker's page itself came from the attacker's server before the name was rebound: the test
      // serves it.
      const context = await newContext({ proxy: { server: `http://127.0.0.1:${target.port}` } });
      const origin = `http://rebind.test:${target.port}`;
      await context.route(`${origin}/attack.html`, (route) =>
        route.fulfill({
          contentType: 'text/html',
          body: '<!doctype html><title>attacker</title><p>hello</p>',
        }),
      );
      const page = await context.newPage();
      await page.goto(`${origin}/attack.html`);
      const answers = await page.evaluate(async (id) => {
        const out: { path: string; status: number; text: string }[] = [];
        for (const path of [
          '/api/queues',
          `/api/queues/index/records/${id}`,
          '/api/audit',
          '/api/overview',
          '/api/events',
          '/api/session',
        ]) {
          const res = await fetch(path);
          // A stream answered 200 never ends: its status says enough.
          out.push({ path, status: res.status, text: res.status === 200 ? '' : await res.text() });
        }
        return out;
      }, recordId);
      for (const answer of answers) {
        expect([answer.path, answer.status]).toEqual([answer.path, 403]);
        expect(answer.text).not.toContain(SECRET);
        expect(answer.text).toContain('--allowed-host rebind.test');
      }
      const navigation = await page.goto(`${origin}/`);
      expect(navigation?.status()).toBe(403);
      expect(await page.textContent('body')).toContain('--allowed-host rebind.test');
      expect(await page.locator('#app').count()).toBe(0);
    }
  });

  it('a page of another origin cannot read the API, though this browser is signed in to the console', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(guarded.url);
    await page.getByLabel('Token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Actions enabled').waitFor();
    // Another app on another port of this machine: the same site, so the browser even sends the
    // SameSite=Strict cookie. Served from loopback, as the console is (the browser would not let a
    // public page call loopback at all, which would prove nothing about the console).
    const app = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>another app</title>');
    });
    app.listen(0, '127.0.0.1');
    await once(app, 'listening');
    closers.push(() => new Promise<void>((resolve) => app.close(() => resolve())));
    await page.goto(`http://127.0.0.1:${(app.address() as AddressInfo).port}/other.html`);
    const target = `${guarded.url}api/queues/index/records/${encodeURIComponent(recordId)}`;
    // What the console answered, as the browser's network layer saw it before blocking the page from it.
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    const sent = new Map<string, string>();
    const answered: { url: string; status: number }[] = [];
    cdp.on('Network.requestWillBeSent', (event) => sent.set(event.requestId, event.request.url));
    cdp.on('Network.responseReceivedExtraInfo', (event) => {
      const url = sent.get(event.requestId);
      if (url === target) answered.push({ url, status: event.statusCode });
    });
    const reads = await page.evaluate(async (url) => {
      const out: string[] = [];
      for (const mode of ['cors', 'no-cors'] as const) {
        try {
          const res = await fetch(url, { mode, credentials: 'include' });
          out.push(res.type === 'opaque' ? 'opaque' : `read: ${await res.text()}`);
        } catch {
          out.push('blocked');
        }
      }
      return out;
    }, target);
    expect(reads).toEqual(['blocked', 'blocked']);
    // The browser blocks the page from reading either answer; the console refused both anyway.
    await expect.poll(() => answered.length, { timeout: 5_000 }).toBe(2);
    expect(answered.map((a) => a.status)).toEqual([403, 403]);
  });

  it('with a token, nothing is read before signing in; the token is given once and becomes an HttpOnly SameSite=Strict cookie, never part of an address', async () => {
    const context = await newContext();
    const page = await context.newPage();
    const urls: string[] = [];
    page.on('request', (req) => urls.push(req.url()));
    // An old link with the token in its fragment signs nobody in.
    await page.goto(`${guarded.url}#token=${TOKEN}`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.locator('#app').count()).toBe(0);
    const before = await page.evaluate(async () => (await fetch('api/queues')).status);
    expect(before).toBe(401);

    await page.getByLabel('Token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: "That is not this console's token." }).waitFor();
    expect(await context.cookies()).toEqual([]);

    await page.getByLabel('Token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Actions enabled').waitFor();
    await page.getByText(/^Live · updated/).waitFor();
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'stormguard_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(session?.value).not.toContain(TOKEN);
    expect(await page.evaluate<string>('document.cookie')).not.toContain('stormguard_session');
    const record = await page.evaluate(
      async (id) => (await fetch(`api/queues/index/records/${encodeURIComponent(id)}`)).text(),
      recordId,
    );
    expect(record).toContain(SECRET);
    expect(await page.evaluate<number>('sessionStorage.length + localStorage.length')).toBe(0);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(async () => (await fetch('api/queues')).status)).toBe(401);
    // The token went to the console once, in the sign-in form's body: never in an address.
    expect(urls.filter((u) => u.includes(TOKEN) && !u.includes('#token='))).toEqual([]);
  });
});

describe('stormguard dashboard: the token and the names it answers for', () => {
  let redis: TestRedis;
  let dir: string;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    redis = await TestRedis.start();
    dir = mkdtempSync(join(tmpdir(), 'sg-console-token-'));
  }, 120_000);

  afterAll(async () => {
    await redis?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('takes the token from --token-file or STORMGUARD_DASHBOARD_TOKEN; --token still works but warns it shows in the process list', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, `${TOKEN}\n`);
    const starts: [string[], Record<string, string>, boolean][] = [
      [['--token-file', file], {}, false],
      [[], { STORMGUARD_DASHBOARD_TOKEN: TOKEN }, false],
      [['--token', TOKEN], {}, true],
    ];
    for (const [args, env, warns] of starts) {
      const started = await startConsole(['--redis', redis.url, '--prefix', PREFIX, ...args], env);
      try {
        const host = `127.0.0.1:${started.port}`;
        expect([args, (await get(started.port, '/api/queues', { host })).status]).toEqual([args, 401]);
        const asScript = await get(started.port, '/api/queues', { host, authorization: `Bearer ${TOKEN}` });
        expect([args, asScript.status]).toEqual([args, 200]);
        expect([args, started.stderr()]).toEqual([
          args,
          warns
            ? 'warning: --token is visible to every user of this machine in the process list; set STORMGUARD_DASHBOARD_TOKEN or use --token-file instead\n'
            : '',
        ]);
      } finally {
        await started.stop();
      }
    }
  });

  it('refuses to start off loopback without --allowed-host, or with a bad token source or host name (exit 2)', async () => {
    const base = ['dashboard', '--redis', redis.url, '--port', '0'];
    const cases: [string[], RegExp][] = [
      [
        ['--host', '0.0.0.0'],
        /--host 0\.0\.0\.0: other machines reach the console there, so name what they open with --allowed-host/,
      ],
      [['--host', '::'], /--allowed-host/],
      [
        ['--allowed-host', 'https://console.example.com/'],
        /--allowed-host: "https:\/\/console\.example\.com\/" is not a host name/,
      ],
      [['--token', TOKEN, '--token-file', join(dir, 'token')], /--token and --token-file: give one of them/],
      [['--token-file', join(dir, 'missing')], /--token-file: cannot read .*missing \(ENOENT\)/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(...base, ...args);
      expect([args, result.code]).toEqual([args, 2]);
      expect(result.stderr).toMatch(message);
    }
  });

  it('answers for the --allowed-host names besides the loopback ones, and refuses any other', async () => {
    const started = await startConsole([
      '--redis',
      redis.url,
      '--prefix',
      PREFIX,
      '--allowed-host',
      'console.test',
      '--allowed-host',
      'ops.test:8443,ops2.test',
    ]);
    try {
      const cases: [string, number][] = [
        [`console.test:${started.port}`, 200],
        ['ops.test:8443', 200],
        ['ops2.test', 200],
        [`localhost:${started.port}`, 200],
        [`rebind.test:${started.port}`, 403],
        [`ops.test:${started.port}`, 403],
      ];
      for (const [host, status] of cases)
        expect([host, (await get(started.port, '/api/queues', { host })).status]).toEqual([host, status]);
    } finally {
      await started.stop();
    }
  });
});
