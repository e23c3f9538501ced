/**
 * The console's request handler mounted under a base path in each framework docs/console.md shows:
 * node:http, Express 5, Fastify 5 and Hono 4 on @hono/node-server, each exactly as the docs mount it. The
 * same cases run against every mount: signing in (the sign-in form's body reaching the console however
 * the framework treats it), the page and its assets, an API read, the first live (SSE) event, and an
 * action refused without the session or the CSRF token and applied with both (its JSON body reaching
 * the console whether or not the framework parsed it first). Real Redis behind it.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type HttpBindings, serve } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import express from 'express';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { createDashboard, type DashboardHandler } from '../../src/dashboard/handler.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { redisFleet } from '../../src/redis/fleet.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { TestRedis } from '../helpers/redis-server.js';
import { ensureConsoleBuilt } from './harness.js';

const BASE = '/ops/stormguard';
const TOKEN = 'mount-test-token';

/** A server with the console mounted at BASE and one route of the app's own, `GET /health` → `app`. */
type Mount = (dashboard: DashboardHandler) => Promise<{ url: string; close(): Promise<void> }>;

async function listening(server: Server): Promise<{ url: string; close(): Promise<void> }> {
  if (!server.listening) await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const MOUNTS: [string, Mount][] = [
  [
    'node:http',
    async (dashboard) => {
      const server = createServer((req, res) =>
        dashboard(req, res, () => {
          if (req.url === '/health') res.end('app');
          else res.writeHead(404).end();
        }),
      );
      server.listen(0, '127.0.0.1');
      return listening(server);
    },
  ],
  [
    'Express',
    async (dashboard) => {
      const app = express();
      // An app that parses JSON bodies itself: the console takes the parsed body.
      app.use(express.json());
      app.get('/health', (_req, res) => {
        res.send('app');
      });
      app.use(BASE, dashboard);
      return listening(app.listen(0, '127.0.0.1'));
    },
  ],
  [
    'Fastify',
    async (dashboard) => {
      const app = Fastify();
      app.get('/health', async () => 'app');
      // Fastify has read the body by now: hand it over with the raw request.
      const console = (request: FastifyRequest, reply: FastifyReply) => {
        void reply.hijack();
        dashboard(Object.assign(request.raw, { body: request.body }), reply.raw);
      };
      app.all(BASE, console);
      app.all(`${BASE}/*`, console);
      await app.listen({ port: 0, host: '127.0.0.1' });
      return listening(app.server);
    },
  ],
  [
    'Hono',
    async (dashboard) => {
      const app = new Hono<{ Bindings: HttpBindings }>();
      app.get('/health', (c) => c.text('app'));
      app.all(`${BASE}/*`, (c) => {
        dashboard(c.env.incoming, c.env.outgoing);
        return RESPONSE_ALREADY_SENT;
      });
      return listening(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server);
    },
  ],
];

let redis: TestRedis;
let client: Redis;

beforeAll(async () => {
  await ensureConsoleBuilt();
  redis = await TestRedis.start();
  client = new Redis(redis.connection);
}, 180_000);

afterAll(async () => {
  client?.disconnect();
  await redis?.close();
});

describe.each(MOUNTS)('the console mounted under the base path in %s', (name, mount) => {
  const prefix = `mount-${name.replace(/\W/g, '')}`;
  let dashboard: DashboardHandler;
  let server: { url: string; close(): Promise<void> };
  let recordId: string;
  /** The session cookie signing in gave. */
  let session: string;
  const at = (path: string) => `${server.url}${BASE}${path}`;
  const signedIn = (path: string, init: RequestInit = {}) =>
    fetch(at(path), { ...init, headers: { ...(init.headers as Record<string, string>), Cookie: session } });

  beforeAll(async () => {
    await new RedisBreakerStore({ redis: client, prefix }).record(
      'search',
      'success',
      resolveBreakerOptions({}),
    );
    const store = new RedisDeadLetterStore({ redis: client, prefix });
    recordId = (await store.file(sampleDeadLetter('doc-1'), { attempts: 5, deferrals: 0 }, 60_000)).id;
    dashboard = createDashboard({
      fleet: redisFleet({ redis: client, prefix }),
      basePath: BASE,
      token: TOKEN,
      updateIntervalMs: 200,
    });
    server = await mount(dashboard);
  });

  afterAll(async () => {
    await server?.close();
    await dashboard?.close();
  });

  it('signs in with the form the sign-in page posts, whatever the framework does with its body', async () => {
    const form = await fetch(at('/'));
    expect(form.status).toBe(401);
    expect(await form.text()).toContain(`<form method="post" action="${BASE}/login" enctype="text/plain">`);
    const answer = await fetch(at('/login'), {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain', Origin: server.url },
      body: `token=${TOKEN}\r\n`,
      redirect: 'manual',
    });
    expect([answer.status, answer.headers.get('location')]).toEqual([303, `${BASE}/`]);
    const setCookie = answer.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(new RegExp(`; Path=${BASE}; HttpOnly; SameSite=Strict; Max-Age=43200$`));
    session = setCookie.split(';')[0] ?? '';
  });

  it('serves the page and its assets under the base path, and leaves the rest of the app alone', async () => {
    const bare = await fetch(`${server.url}${BASE}`, { redirect: 'manual' });
    expect([bare.status, bare.headers.get('location')]).toEqual([308, `${BASE}/`]);
    const page = await signedIn('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toMatch(/^default-src 'none'; script-src 'self'/);
    const html = await page.text();
    expect(html).toContain(`<body data-base="${BASE}" data-writable="true">`);
    const script = /<script type="module" src="([^"]+)"/.exec(html)?.[1] ?? '';
    expect(script).toMatch(new RegExp(`^${BASE}/assets/console\\.js\\?v=[0-9a-f]{12}$`));
    const js = await fetch(`${server.url}${script}`);
    expect([js.status, js.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
    expect((await js.text()).length).toBeGreaterThan(1_000);
    expect(await (await fetch(`${server.url}/health`)).text()).toBe('app');
  });

  it('answers its API', async () => {
    expect((await fetch(at(`/api/queues/index/records/${recordId}`))).status).toBe(401);
    const res = await signedIn(`/api/queues/index/records/${recordId}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { record: { jobId: string; reason: string }; malformed: boolean };
    expect([body.record.jobId, body.record.reason, body.malformed]).toEqual(['doc-1', 'max-attempts', false]);
    const breakers = (await (await signedIn('/api/breakers')).json()) as {
      breakers: { dependency: string }[];
    };
    expect(breakers.breakers.map((b) => b.dependency)).toEqual(['search']);
    const missing = await signedIn('/api/nothing-here');
    expect(missing.status).toBe(404);
  });

  it('streams live updates: the first event is the overview', async () => {
    const res = await signedIn('/api/events', { signal: AbortSignal.timeout(10_000) });
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'text/event-stream; charset=utf-8']);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!/event: overview\ndata: .*\n\n/.test(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended before an overview: ${text}`);
      text += decoder.decode(value, { stream: true });
    }
    await reader.cancel();
    const data = /event: overview\ndata: (.*)\n\n/.exec(text)?.[1] ?? '';
    const overview = JSON.parse(data) as {
      dependencies: { dependency: string }[];
      queues: { queue: string }[];
    };
    expect(overview.dependencies.map((d) => d.dependency)).toEqual(['search']);
    expect(overview.queues.map((q) => q.queue)).toEqual(['index']);
  });

  it('refuses an action without the session or the CSRF token, and applies it with both', async () => {
    const override = (headers: Record<string, string>, body: object) =>
      fetch(at('/api/breakers/search'), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const forceOpen = { action: 'force-open', reason: 'maintenance window' };
    const anonymous = await override({}, forceOpen);
    expect(anonymous.status).toBe(401);
    const noCsrf = await override({ Authorization: `Bearer ${TOKEN}` }, forceOpen);
    expect([noCsrf.status, ((await noCsrf.json()) as { error: string }).error]).toEqual([
      403,
      'CSRF check failed: reload the console and try again',
    ]);

    const csrfAnswer = await signedIn('/api/session');
    const { csrf } = (await csrfAnswer.json()) as { csrf: string };
    expect(csrfAnswer.headers.get('set-cookie')).toMatch(
      new RegExp(`; Path=${BASE}; SameSite=Strict; HttpOnly$`),
    );
    const noSession = await override(
      { 'X-Stormguard-CSRF': csrf, Cookie: `stormguard_csrf=${encodeURIComponent(csrf)}` },
      forceOpen,
    );
    expect(noSession.status).toBe(401);
    const signed = {
      'X-Stormguard-CSRF': csrf,
      Cookie: `${session}; stormguard_csrf=${encodeURIComponent(csrf)}`,
    };
    const applied = await override(signed, forceOpen);
    expect(applied.status).toBe(200);
    expect(((await applied.json()) as { message: string }).message).toBe(
      'search: force-open applied, now open',
    );
    const [breaker] = await new RedisBreakerStore({ redis: client, prefix }).list();
    // The reason came from the request's body, however the framework handled it.
    expect(breaker?.override).toMatchObject({ state: 'open', reason: 'maintenance window' });
  });
});

describe('mounts that cannot work say how to fix them', () => {
  const prefix = 'mount-mistakes';
  let dashboard: DashboardHandler;

  beforeAll(async () => {
    await new RedisBreakerStore({ redis: client, prefix }).record(
      'search',
      'success',
      resolveBreakerOptions({}),
    );
    dashboard = createDashboard({
      fleet: redisFleet({ redis: client, prefix }),
      basePath: BASE,
      token: TOKEN,
    });
  });

  afterAll(async () => {
    await dashboard?.close();
  });

  it('Fastify without the parsed body handed over: the action fails naming the fix, never with an empty body', async () => {
    const app = Fastify();
    app.all(`${BASE}/*`, (request, reply) => {
      void reply.hijack();
      dashboard(request.raw, reply.raw);
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const server = await listening(app.server);
    try {
      const { csrf } = (await (
        await fetch(`${server.url}${BASE}/api/session`, { headers: { Authorization: `Bearer ${TOKEN}` } })
      ).json()) as { csrf: string };
      const res = await fetch(`${server.url}${BASE}/api/breakers/search`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Authorization: `Bearer ${TOKEN}`,
          'X-Stormguard-CSRF': csrf,
          Cookie: `stormguard_csrf=${encodeURIComponent(csrf)}`,
        },
        body: JSON.stringify({ action: 'force-open', reason: 'maintenance window' }),
      });
      expect(res.status).toBe(500);
      expect(((await res.json()) as { error: string }).error).toMatch(
        /^the request body was read before the console got it .*: hand the parsed body over as req\.body/,
      );
    } finally {
      await server.close();
    }
  });

  it('Express mounted at another path than basePath: every request says which basePath to pass', async () => {
    const app = express();
    app.use('/ops/console', dashboard);
    const server = await listening(app.listen(0, '127.0.0.1'));
    try {
      const res = await fetch(`${server.url}/ops/console/`);
      expect(res.status).toBe(500);
      expect(((await res.json()) as { error: string }).error).toBe(
        'the console is mounted at "/ops/console" but its basePath is "/ops/stormguard": pass basePath: "/ops/console" to createDashboard',
      );
    } finally {
      await server.close();
    }
  });
});
