import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classify, definePolicy } from '../../src/index.js';
import { rejectionOf } from './rejection.js';

// Unknown errors are not retried here, so a retryable verdict can only come from a classifier that
// recognised what fetch really raised.
const policy = definePolicy({ maxAttempts: 3, retryUnknown: false });
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const verdict = (error: unknown) => classify(error, policy, NOW);

/** What the local server does, by path. */
const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  '/throttled': (_req, res) => {
    res.writeHead(429, { 'Retry-After': '7', 'Content-Type': 'text/plain' }).end('slow down');
  },
  '/closed': (req) => {
    req.socket.destroy(); // closes cleanly (FIN) before any response
  },
  '/reset': (req) => {
    req.socket.resetAndDestroy(); // TCP RST
  },
  '/silent': () => undefined, // never answers
};

const server = createServer((req, res) => routes[req.url ?? '']?.(req, res));
let base = '';

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  server.close();
  await once(server, 'close');
});

/** The common way to fail on a non-2xx response: an error carrying the response. */
class HttpError extends Error {
  constructor(readonly response: Response) {
    super(`HTTP ${response.status}`);
  }
}

describe("classification of what Node's fetch (undici) raises", () => {
  it('429 with Retry-After: retryable throttling that waits what the server asked', async () => {
    const response = await fetch(`${base}/throttled`);
    await response.text();
    expect(response.status).toBe(429);
    const expected = { retryable: true, reason: 'http-429', family: 'http-throttle', retryAfterMs: 7_000 };
    expect(verdict(new HttpError(response))).toEqual(expected);
    expect(verdict(response)).toEqual(expected); // the Response itself thrown
  });

  it('a connection closed before the response: retryable', async () => {
    const error = await rejectionOf(fetch(`${base}/closed`));
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).cause).toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(verdict(error)).toEqual({ retryable: true, reason: 'UND_ERR_SOCKET', family: 'network' });
  });

  it('a connection reset (RST): retryable', async () => {
    const error = await rejectionOf(fetch(`${base}/reset`));
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).cause).toMatchObject({ code: 'ECONNRESET' });
    expect(verdict(error)).toEqual({ retryable: true, reason: 'ECONNRESET', family: 'network' });
  });

  it('a server that never answers, cut by AbortSignal.timeout: retryable', async () => {
    const error = await rejectionOf(fetch(`${base}/silent`, { signal: AbortSignal.timeout(50) }));
    expect(error).toMatchObject({ name: 'TimeoutError' });
    expect(verdict(error)).toEqual({ retryable: true, reason: 'timeout', family: 'network' });
  });

  it('a request the caller aborts: not retryable', async () => {
    const controller = new AbortController();
    const pending = rejectionOf(fetch(`${base}/silent`, { signal: controller.signal }));
    controller.abort();
    const error = await pending;
    expect(error).toMatchObject({ name: 'AbortError' });
    expect(verdict(error)).toEqual({ retryable: false, reason: 'aborted' });
  });
});
