import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { type MetricsServer, serveMetrics } from './http.js';

describe('serveMetrics', () => {
  let server: MetricsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('serves the registry on /metrics in the text format, 404 elsewhere, 405 for other methods', async () => {
    const registry = new Registry();
    new Counter({ name: 'demo_total', help: 'demo', registers: [registry] }).inc(3);
    server = await serveMetrics({ port: 0, host: '127.0.0.1', registry });
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/metrics`);

    const ok = await fetch(server.url);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe(registry.contentType);
    expect(await ok.text()).toContain('demo_total 3');

    const missing = await fetch(`http://127.0.0.1:${server.port}/other`);
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain('/metrics');

    const post = await fetch(server.url, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('answers 500 with the reason when the registry cannot render', async () => {
    const registry = new Registry();
    new Counter({
      name: 'broken_total',
      help: 'a collect that throws',
      registers: [registry],
      collect() {
        throw new Error('store exploded');
      },
    });
    server = await serveMetrics({ port: 0, host: '127.0.0.1', registry });
    const res = await fetch(server.url);
    expect(res.status).toBe(500);
    expect(await res.text()).toContain('store exploded');
  });

  it('names the port and the fix when it cannot listen', async () => {
    server = await serveMetrics({ port: 0, host: '127.0.0.1', registry: new Registry() });
    await expect(serveMetrics({ port: server.port, host: '127.0.0.1' })).rejects.toThrow(
      /cannot listen on 127\.0\.0\.1:\d+ .*pick another --port/,
    );
    await expect(serveMetrics({ port: 70_000 })).rejects.toThrow(/port must be an integer from 0 to 65535/);
  });
});
