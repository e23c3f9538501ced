import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Registry, register } from 'prom-client';
import { InvalidInputError } from '../errors/invalid-input-error.js';

/**
 * Options of {@link metricsHandler}.
 *
 * @example
 * metricsHandler(registry, { path: '/stormguard/metrics' });
 */
export interface MetricsHandlerOptions {
  /** The path metrics are served on. Default `/metrics`. */
  path?: string;
}

/**
 * A `node:http` request handler that serves `registry` in Prometheus's text format on `GET /metrics`
 * (and `HEAD`), answers 404 elsewhere and 405 for other methods. A registry that fails to render
 * answers 500 with the error's message, never a crash.
 *
 * @example
 * import { createServer } from 'node:http';
 * createServer(metricsHandler(registry)).listen(9464);
 */
export function metricsHandler(
  registry: Registry = register,
  options: MetricsHandlerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const path = options.path ?? '/metrics';
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== path) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`not found: metrics are served on ${path}\n`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    registry.metrics().then(
      (body) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (error: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`metrics failed: ${error instanceof Error ? error.message : String(error)}\n`);
      },
    );
  };
}

/**
 * Options of {@link serveMetrics}.
 *
 * @example
 * await serveMetrics({ port: 0, host: '127.0.0.1', registry });
 */
export interface ServeMetricsOptions extends MetricsHandlerOptions {
  /** TCP port; 0 picks a free one (read it back from `port`). Default 9464. */
  port?: number;
  /** Interface to listen on. Default `0.0.0.0` (Prometheus scrapes from another host). */
  host?: string;
  /** Default: prom-client's global `register`. */
  registry?: Registry;
}

/**
 * A running `/metrics` server.
 *
 * @example
 * const { url } = await serveMetrics({ port: 0 }); // http://127.0.0.1:40123/metrics
 */
export interface MetricsServer {
  /** The port it listens on (the real one when 0 was asked for). */
  readonly port: number;
  /** Where to scrape, e.g. `http://127.0.0.1:9464/metrics`. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Starts a tiny HTTP server exposing `registry` on `/metrics`, for processes that have no HTTP server of
 * their own (workers usually do not).
 *
 * @example
 * const server = await serveMetrics({ port: 9464, registry });
 * // ...
 * await server.close();
 */
export async function serveMetrics(options: ServeMetricsOptions = {}): Promise<MetricsServer> {
  const port = options.port ?? 9464;
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new InvalidInputError(`metrics server: port must be an integer from 0 to 65535, got ${port}`);
  const host = options.host ?? '0.0.0.0';
  const path = options.path ?? '/metrics';
  const server = createServer(metricsHandler(options.registry ?? register, { path }));
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error) =>
      reject(
        new InvalidInputError(
          `metrics server: cannot listen on ${host}:${port} (${error.message}); pick another --port or --host`,
        ),
      );
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    port: bound,
    url: `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${bound}${path}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
    },
  };
}
