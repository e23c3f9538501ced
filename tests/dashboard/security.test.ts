/**
 * The console's request handler against raw HTTP requests, as a page on another site (or a script) can
 * send them: a forged Host (DNS rebinding), a proxy's forwarded host, `Origin: null`, malformed
 * percent-encoding, reads without a session, a forged or expired session cookie, and the token in a query
 * string. node:http sends exactly the headers given (no Host unless given). Memory stores behind it.
 */
import { once } from 'node:events';
import { createServer, IncomingMessage, request, type Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDashboard,
  type DashboardHandler,
  type DashboardOptions,
} from '../../src/dashboard/handler.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { memoryFleet } from '../../src/status/memory-fleet.js';
import { ensureConsoleBuilt } from './harness.js';

const TOKEN = 'raw-http-test-token';
/** What a record's data holds: no refused request may carry it back. */
const SECRET = '4111 1111 1111 1111';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request with exactly these headers (no Host unless given), read to its end or its first `until`. */
function send(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  options: { method?: string; body?: string; until?: RegExp } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers, setHost: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
          // A live stream never ends: stop at what the test waits for.
          if (options.until?.test(body)) {
            res.destroy();
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
          }
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`${path}: no answer in 10 s`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A fleet in memory; no test here replays. */
function memoryBackend() {
  return memoryFleet();
}

/** A console on a free loopback port, with one dead letter whose data holds SECRET. */
async function serveConsole(options: Omit<DashboardOptions, 'fleet'> = {}) {
  const fleet = memoryBackend();
  const { id } = await fleet.deadLetters.file(
    sampleDeadLetter('doc-1', { data: { card: SECRET } }),
    { attempts: 5, deferrals: 0 },
    60_000,
  );
  const dashboard = createDashboard({
    fleet,
    replayQueue: () => {
      throw new Error('no replays in this test');
    },
    updateIntervalMs: 60_000,
    ...options,
  });
  const server = createServer(dashboard);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { port, id, host: `127.0.0.1:${port}`, close: () => closeBoth(server, dashboard) };
}

async function closeBoth(server: Server, dashboard: DashboardHandler): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await dashboard.close();
}

const errorOf = (answer: Answer) => (JSON.parse(answer.body) as { error: string }).error;

beforeAll(() => ensureConsoleBuilt(), 180_000);

describe('a read-only console answers only for its own names', () => {
  let c: Awaited<ReturnType<typeof serveConsole>>;
  beforeAll(async () => {
    c = await serveConsole();
  });
  afterAll(() => c?.close());

  it('serves the loopback names, on any port', async () => {
    for (const host of [
      `localhost:${c.port}`,
      `127.0.0.1:${c.port}`,
      `[::1]:${c.port}`,
      'LOCALHOST',
      'localhost.:80',
    ]) {
      const answer = await send(c.port, `/api/queues/index/records/${c.id}`, { host });
      expect([host, answer.status]).toEqual([host, 200]);
      expect(answer.body).toContain(SECRET);
    }
  });

  it('refuses a forged Host (DNS rebinding) on every path, naming --allowed-host, and reads nothing', async () => {
    for (const host of [
      `rebind.example:${c.port}`,
      `localhost.rebind.example:${c.port}`,
      `127.0.0.1.nip.io:${c.port}`,
      '127.0.0.2',
    ])
      for (const path of [
        '/',
        '/api/queues',
        `/api/queues/index/records/${c.id}`,
        '/api/overview',
        '/api/events',
        '/api/audit',
      ]) {
        const answer = await send(c.port, path, { host });
        expect([host, path, answer.status]).toEqual([host, path, 403]);
        expect(errorOf(answer)).toMatch(/--allowed-host/);
        expect(answer.body).not.toContain(SECRET);
      }
    const named = await send(c.port, '/api/queues', { host: `rebind.example:${c.port}` });
    expect(errorOf(named)).toBe(
      `this console does not answer for the host "rebind.example:${c.port}": a page on another site can point its own name at this machine, so only the loopback names and the names given with --allowed-host are served; if rebind.example is the console's name, start it with --allowed-host rebind.example (allowedHosts in createDashboard)`,
    );
  });

  it('refuses a request without a Host, or with one that is not a host name', async () => {
    expect((await send(c.port, '/api/queues')).status).toBe(400);
    for (const host of ['user@localhost', 'localhost:7600/x', '', 'local host'])
      expect([host, (await send(c.port, '/api/queues', { host })).status]).toEqual([
        host,
        host === '' ? 400 : 403,
      ]);
  });

  it('through a proxy (forwarded headers) without allowedHosts: refused, naming the option', async () => {
    for (const header of ['x-forwarded-for', 'x-forwarded-host', 'forwarded', 'x-real-ip']) {
      const value =
        header === 'forwarded' ? 'for=10.0.0.9' : header === 'x-forwarded-host' ? 'localhost' : '10.0.0.9';
      const answer = await send(c.port, '/api/queues', { host: c.host, [header]: value });
      expect([header, answer.status]).toEqual([header, 403]);
      expect(errorOf(answer)).toMatch(/reached through a proxy .*--allowed-host/);
    }
  });

  it('Origin: null, another origin, or an origin that is not a URL: 403 or 400, never 500', async () => {
    const cases: [string, number][] = [
      ['null', 403],
      ['http://rebind.example', 403],
      [`http://localhost:${c.port + 1}`, 403],
      ['not a url', 400],
      ['http://[bad', 400],
    ];
    for (const [origin, status] of cases) {
      for (const [method, path] of [
        ['GET', '/api/queues'],
        ['GET', '/api/events'],
        ['POST', `/api/queues/index/records/${c.id}/delete`],
      ] as const) {
        const answer = await send(c.port, path, { host: c.host, origin }, { method });
        expect([origin, path, answer.status]).toEqual([origin, path, status]);
        expect(answer.body).not.toContain(SECRET);
      }
    }
    // The console's own origin passes.
    expect((await send(c.port, '/api/queues', { host: c.host, origin: `http://${c.host}` })).status).toBe(
      200,
    );
  });

  it('a page of another origin calling the API (Sec-Fetch-Site) is refused', async () => {
    for (const site of ['cross-site', 'same-site']) {
      const answer = await send(c.port, `/api/queues/index/records/${c.id}`, {
        host: c.host,
        'sec-fetch-site': site,
      });
      expect([site, answer.status]).toEqual([site, 403]);
    }
    expect(
      (await send(c.port, '/api/queues', { host: c.host, 'sec-fetch-site': 'same-origin' })).status,
    ).toBe(200);
  });

  it('malformed percent-encoding in a path or a cookie: 400 or 403, never 500', async () => {
    for (const [method, path] of [
      ['GET', '/api/queues/%E0%A4%A/records'],
      ['GET', '/api/queues/index/records/%E0%A4%A'],
      ['GET', '/api/queues/%ZZ/search?q=x'],
      ['POST', '/api/queues/index/records/%E0%A4%A/delete'],
      ['POST', '/api/breakers/%C0'],
      ['POST', '/api/limits/%C0'],
    ] as const) {
      const answer = await send(c.port, path, { host: c.host }, { method });
      expect([method, path, answer.status]).toEqual([method, path, 400]);
    }
    const bad = await send(c.port, '/api/queues/index/records/%E0%A4%A', { host: c.host });
    expect(errorOf(bad)).toBe('malformed percent-encoding in the path: "%E0%A4%A"');
    const cookie = await send(c.port, '/api/session', {
      host: c.host,
      cookie: 'stormguard_csrf=%E0%A4%A; stormguard_session=%ZZ',
    });
    expect(cookie.status).toBe(200);
  });
});

describe('a handler reached over the network', () => {
  /** The handler's answer to a request that arrived on `localAddress` (an in-process request: no port to bind). */
  async function answerOn(localAddress: string, options: Omit<DashboardOptions, 'fleet'>, host: string) {
    const dashboard = createDashboard({ fleet: memoryBackend(), updateIntervalMs: 60_000, ...options });
    try {
      const socket = new Socket();
      Object.defineProperty(socket, 'localAddress', { value: localAddress });
      const req = new IncomingMessage(socket);
      Object.assign(req, { method: 'GET', url: '/api/queues', headers: { host } });
      req.push(null);
      const res = new ServerResponse(req);
      const chunks: Buffer[] = [];
      let finished: () => void = () => {};
      const ended = new Promise<void>((resolve) => {
        finished = resolve;
      });
      // No socket to write to: what the handler sends is kept here.
      res.write = ((chunk: Buffer | string) => chunks.push(Buffer.from(chunk))) as never;
      res.end = ((chunk?: Buffer | string) => {
        if (chunk) chunks.push(Buffer.from(chunk));
        finished();
        return res;
      }) as never;
      dashboard(req, res);
      await ended;
      return { status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') };
    } finally {
      await dashboard.close();
    }
  }

  it('without allowedHosts refuses what arrives on a non-loopback address, naming the option', async () => {
    const refused = await answerOn('10.0.0.5', {}, 'localhost:3000');
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toEqual({
      error:
        'this console is reached over the network (on 10.0.0.5) but was given no names to answer for: start it with --allowed-host <the name users open> (allowedHosts in createDashboard)',
    });
    expect(
      (await answerOn('10.0.0.5', { allowedHosts: ['ops.example.com'] }, 'ops.example.com')).status,
    ).toBe(200);
    for (const local of ['127.0.0.1', '::1', '::ffff:127.0.0.1'])
      expect([local, (await answerOn(local, {}, 'localhost:3000')).status]).toEqual([local, 200]);
  });
});

describe('allowedHosts', () => {
  let c: Awaited<ReturnType<typeof serveConsole>>;
  beforeAll(async () => {
    c = await serveConsole({ allowedHosts: ['console.example.com', 'ops.example.com:8443'] });
  });
  afterAll(() => c?.close());

  it('serves the names given (any port, or the one given) besides the loopback ones', async () => {
    const cases: [string, number][] = [
      ['console.example.com', 200],
      ['Console.Example.com:443', 200],
      ['ops.example.com:8443', 200],
      ['ops.example.com', 403],
      ['ops.example.com:443', 403],
      ['console.example.com.rebind.example', 403],
      ['evil-console.example.com', 403],
      [c.host, 200],
    ];
    for (const [host, status] of cases)
      expect([host, (await send(c.port, '/api/queues', { host })).status]).toEqual([host, status]);
  });

  it("checks the host a proxy forwards as well as the proxy's own", async () => {
    const through = (forwarded: Record<string, string>) =>
      send(c.port, '/api/queues', { host: '127.0.0.1:7600', 'x-forwarded-for': '10.0.0.9', ...forwarded });
    expect((await through({ 'x-forwarded-host': 'console.example.com' })).status).toBe(200);
    expect((await through({ forwarded: 'for=10.0.0.9;host=console.example.com;proto=https' })).status).toBe(
      200,
    );
    expect((await through({})).status).toBe(200);
    const rebound = await through({ 'x-forwarded-host': 'rebind.example' });
    expect(rebound.status).toBe(403);
    expect(errorOf(rebound)).toMatch(/"rebind\.example".*--allowed-host rebind\.example/);
    expect((await through({ forwarded: 'host="rebind.example"' })).status).toBe(403);
  });

  it('refuses a list entry that is not a host name, naming it', () => {
    for (const entry of ['https://console.example.com', 'console.example.com/ops', '', 'a b', 'user@host'])
      expect(() => createDashboard({ fleet: memoryBackend(), allowedHosts: [entry] })).toThrow(
        `allowedHosts: ${JSON.stringify(entry)} is not a host name`,
      );
  });
});

describe('with a token, reading needs a session', () => {
  let clock = 1_800_000_000_000;
  let c: Awaited<ReturnType<typeof serveConsole>>;
  beforeAll(async () => {
    c = await serveConsole({ token: TOKEN, now: () => clock });
  });
  afterAll(() => c?.close());

  const signIn = (body: string, type = 'text/plain') =>
    send(
      c.port,
      '/login',
      { host: c.host, 'content-type': type, origin: `http://${c.host}` },
      { method: 'POST', body },
    );
  const sessionOf = (answer: Answer) => {
    const setCookie = answer.headers['set-cookie']?.[0] ?? '';
    return { setCookie, cookie: setCookie.split(';')[0] ?? '' };
  };
  const reads = [
    '/api/queues',
    `/api/queues/index/records/${'x'}`,
    '/api/overview',
    '/api/audit',
    '/api/breakers',
    '/api/limits',
    '/api/session',
  ];

  it('the page, the API and the live stream answer nothing without a session; the page asks for the token', async () => {
    const page = await send(c.port, '/', { host: c.host });
    expect(page.status).toBe(401);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('<form method="post" action="/login" enctype="text/plain">');
    expect(page.body).toContain('<input type="password" name="token"');
    expect(page.body).not.toContain('console.js');
    for (const path of [...reads, `/api/queues/index/records/${c.id}`, '/api/events']) {
      const answer = await send(c.port, path, { host: c.host });
      expect([path, answer.status]).toEqual([path, 401]);
      expect(errorOf(answer)).toBe(
        'this console needs its token: sign in at / (or send Authorization: Bearer <token>)',
      );
      expect(answer.body).not.toContain(SECRET);
    }
    // The stylesheet holds no data: the sign-in page needs it.
    const css = /href="([^"]+console\.css[^"]*)"/.exec(page.body)?.[1] ?? '';
    expect((await send(c.port, css, { host: c.host })).status).toBe(200);
  });

  it('the token is exchanged once for an HttpOnly SameSite=Strict cookie that is not the token', async () => {
    const answer = await signIn(`token=${TOKEN}\r\n`);
    expect([answer.status, answer.headers.location]).toEqual([303, '/']);
    const { setCookie, cookie } = sessionOf(answer);
    expect(setCookie).toMatch(
      /^stormguard_session=[\w.-]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/,
    );
    expect(setCookie).not.toContain(TOKEN);
    const record = await send(c.port, `/api/queues/index/records/${c.id}`, { host: c.host, cookie });
    expect(record.status).toBe(200);
    expect(record.body).toContain(SECRET);
    const page = await send(c.port, '/', { host: c.host, cookie });
    expect([page.status, page.body.includes('console.js')]).toEqual([200, true]);
    const live = await send(c.port, '/api/events', { host: c.host, cookie }, { until: /event: overview\n/ });
    expect(live.status).toBe(200);
    // The same works from a form-encoded or JSON body, and a script may send the token as a bearer.
    expect(
      (await signIn(`token=${encodeURIComponent(TOKEN)}`, 'application/x-www-form-urlencoded')).status,
    ).toBe(303);
    expect((await signIn(JSON.stringify({ token: TOKEN }), 'application/json')).status).toBe(303);
    expect(
      (await send(c.port, '/api/queues', { host: c.host, authorization: `Bearer ${TOKEN}` })).status,
    ).toBe(200);
  });

  it('a wrong token does not sign in, and signing out clears the cookie', async () => {
    for (const body of ['token=wrong-token-here', 'nothing', `token=${TOKEN}x`]) {
      const answer = await signIn(body);
      expect([body, answer.status, answer.headers['set-cookie']]).toEqual([body, 401, undefined]);
      expect(answer.body).toMatch(
        /<p class="problem" role="alert">(That is not this console&#39;s token\.|Give the token\.)<\/p>/,
      );
    }
    const out = await send(
      c.port,
      '/logout',
      { host: c.host, origin: `http://${c.host}` },
      { method: 'POST' },
    );
    expect([out.status, out.headers['set-cookie']?.[0]]).toEqual([
      303,
      'stormguard_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0',
    ]);
    expect((await send(c.port, '/login', { host: c.host })).status).toBe(405);
  });

  it('a missing, forged, tampered, expired or token-valued cookie, or a wrong bearer, reads nothing', async () => {
    const { cookie } = sessionOf(await signIn(`token=${TOKEN}`));
    const value = cookie.slice('stormguard_session='.length);
    const [expires, nonce, mac] = value.split('.');
    const forged = [
      '',
      `stormguard_session=${TOKEN}`,
      `stormguard_session=${encodeURIComponent(TOKEN)}`,
      `stormguard_session=${expires}.${nonce}.${mac?.slice(0, -2)}AA`,
      `stormguard_session=${(Number.parseInt(expires ?? '0', 36) + 60_000).toString(36)}.${nonce}.${mac}`,
      `stormguard_session=${expires}.${nonce}x.${mac}`,
      `stormguard_session=${value}.extra`,
      'stormguard_session=%E0%A4%A',
      `other_cookie=${value}`,
    ];
    for (const bad of forged) {
      const answer = await send(c.port, `/api/queues/index/records/${c.id}`, { host: c.host, cookie: bad });
      expect([bad, answer.status]).toEqual([bad, 401]);
    }
    expect(
      (await send(c.port, '/api/queues', { host: c.host, cookie, authorization: 'Bearer wrong-token' }))
        .status,
    ).toBe(401);
    // The session lasts 12 hours from signing in.
    expect((await send(c.port, '/api/queues', { host: c.host, cookie })).status).toBe(200);
    clock += 12 * 60 * 60_000;
    expect((await send(c.port, '/api/queues', { host: c.host, cookie })).status).toBe(401);
  });

  it('the token in a query string is refused, never accepted, on every path', async () => {
    const { cookie } = sessionOf(await signIn(`token=${TOKEN}`));
    for (const path of [
      `/?token=${TOKEN}`,
      `/api/queues?token=${TOKEN}`,
      `/api/events?token=${TOKEN}`,
      `/login?token=${TOKEN}`,
    ]) {
      for (const headers of [{ host: c.host }, { host: c.host, cookie }] as Record<string, string>[]) {
        const answer = await send(c.port, path, headers);
        expect([path, answer.status]).toEqual([path, 400]);
        expect(errorOf(answer)).toMatch(/^the console never takes its token in the address/);
        expect(answer.headers['set-cookie']).toBeUndefined();
      }
    }
  });

  it('actions still need the CSRF token besides the session', async () => {
    const { cookie } = sessionOf(await signIn(`token=${TOKEN}`));
    const target = `/api/queues/index/records/${c.id}/delete`;
    const session = await send(c.port, '/api/session', { host: c.host, cookie });
    const { csrf, writable } = JSON.parse(session.body) as { csrf: string; writable: boolean };
    expect(writable).toBe(true);
    const csrfCookie = (session.headers['set-cookie']?.[0] ?? '').split(';')[0];
    const noCsrf = await send(c.port, target, { host: c.host, cookie }, { method: 'POST' });
    expect([noCsrf.status, errorOf(noCsrf)]).toEqual([
      403,
      'CSRF check failed: reload the console and try again',
    ]);
    const noSession = await send(
      c.port,
      target,
      { host: c.host, cookie: `${csrfCookie}`, 'x-stormguard-csrf': csrf },
      { method: 'POST' },
    );
    expect(noSession.status).toBe(401);
    const done = await send(
      c.port,
      target,
      {
        host: c.host,
        cookie: `${cookie}; ${csrfCookie}`,
        'x-stormguard-csrf': csrf,
        origin: `http://${c.host}`,
      },
      { method: 'POST' },
    );
    expect(done.status).toBe(200);
  });
});
