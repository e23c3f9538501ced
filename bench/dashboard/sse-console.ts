/**
 * The console in a process of its own, for the live-stream bench (`sse.ts`): `createDashboard` over a
 * Redis fleet on a free port, with the given update interval and live buffer limit. It answers `sample`
 * with its memory and, per open live stream (by the client's port), what waits in memory for it, reports
 * every `live-client-dropped` event, and ends on `exit`.
 *
 *   (forked by sse.ts) sse-console.ts <redis url> <prefix> <interval ms> <limit bytes | off>
 */
import { createServer, type ServerResponse } from 'node:http';
import { Redis } from 'ioredis';
import { createDashboard } from '../../src/dashboard/handler.js';
import { redisFleet } from '../../src/redis/fleet.js';

const [url = '', prefix = 'sse', interval = '20', limit = 'off'] = process.argv.slice(2);
const send = (message: Record<string, unknown>) => process.send?.(message);

const redis = new Redis(url, { maxRetriesPerRequest: null });
const dashboard = createDashboard({
  fleet: redisFleet({ redis, prefix }),
  updateIntervalMs: Number(interval),
  liveBufferBytes: limit === 'off' ? Number.POSITIVE_INFINITY : Number(limit),
});
const streams = new Map<number, ServerResponse>();
const server = createServer((req, res) => {
  if (req.url?.startsWith('/api/events') && req.socket.remotePort !== undefined)
    streams.set(req.socket.remotePort, res);
  dashboard(req, res);
});
dashboard.events.on('live-client-dropped', (event) => send({ type: 'dropped', event }));

process.on('message', (message: { type: string }) => {
  if (message.type === 'sample') {
    const buffered: Record<number, number> = {};
    for (const [port, res] of streams)
      if (!res.destroyed && !res.writableEnded) buffered[port] = res.writableLength;
    send({ type: 'sample', memory: process.memoryUsage(), buffered });
  } else if (message.type === 'exit') {
    server.closeAllConnections();
    server.close(async () => {
      await dashboard.close();
      redis.disconnect();
      process.exit(0);
    });
  }
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  send({ type: 'ready', port: typeof address === 'object' && address ? address.port : 0 });
});
