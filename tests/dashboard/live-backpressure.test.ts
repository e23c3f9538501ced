import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { createDashboard, type DashboardHandler, type LiveClientDropped } from '../../src/dashboard/index.js';
import { memoryFleet } from '../../src/status/memory-fleet.js';
import { waitFor } from '../helpers/redis-server.js';

const LIMIT = 1_048_576;
/** Dependencies with budget state: each adds a few hundred bytes to every overview update. */
const DEPENDENCIES = 400;
/** Loopback's kernel buffers take several MB before the console's own buffer grows: bounded waits only. */
const WAIT_MS = 60_000;

/** A console over a memory fleet whose overview is large, updated as often as its reads allow. */
async function serveConsole() {
  const fleet = memoryFleet();
  const budget = new RetryBudget({ store: fleet.budget });
  for (let i = 0; i < DEPENDENCIES; i++) {
    const dependency = `dependency-${String(i).padStart(3, '0')}`;
    budget.recordSuccess(dependency, 100);
    await budget.trySpend(dependency);
  }
  await budget.close();
  const dashboard = createDashboard({
    fleet,
    replayQueue: () => {
      throw new Error('no replays in this test');
    },
    updateIntervalMs: 5,
  });
  const server = createServer(dashboard);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { dashboard, server, port: (server.address() as AddressInfo).port };
}

/** A live client on a raw socket: what it read so far, or nothing read at all while `reading` is false. */
class LiveClient {
  readonly socket: Socket;
  received = 0;
  overviews = 0;
  closed = false;
  #tail = '';

  constructor(port: number, reading: boolean) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.write(
      `GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`,
    );
    // A reset connection is an error to its client: expected here.
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
    });
    if (reading) this.read();
    else this.socket.pause();
  }

  read(): void {
    this.socket.on('data', (chunk: Buffer) => {
      this.received += chunk.length;
      // Counted across chunk boundaries: the marker may be split between two reads.
      const text = this.#tail + chunk.toString('latin1');
      this.overviews += text.split('event: overview\n').length - 1;
      this.#tail = text.slice(-20);
    });
    this.socket.resume();
  }
}

let open: { dashboard: DashboardHandler; server: Server; clients: LiveClient[] } | undefined;

afterEach(async () => {
  if (!open) return;
  for (const client of open.clients) client.socket.destroy();
  open.server.closeAllConnections();
  await new Promise<void>((resolve) => open?.server.close(() => resolve()));
  await open.dashboard.close();
  open = undefined;
});

describe('the live feed bounds what waits in memory for each client', () => {
  it(
    'disconnects a client that never reads once about 1 MiB waits for it, while a reading client keeps receiving',
    async () => {
      const { dashboard, server, port } = await serveConsole();
      const dropped: LiveClientDropped[] = [];
      dashboard.events.on('live-client-dropped', (event) => dropped.push(event));
      const stalled = new LiveClient(port, false);
      const reader = new LiveClient(port, true);
      open = { dashboard, server, clients: [stalled, reader] };

      await waitFor(() => dropped.length > 0, WAIT_MS, 'the stalled client to be disconnected');
      const [event] = dropped;
      // What waited when it was cut: within the limit, and the next update would have passed it.
      expect(event?.bufferedBytes).toBeGreaterThan(0);
      expect(event?.bufferedBytes).toBeLessThanOrEqual(LIMIT);
      expect((event?.bufferedBytes ?? 0) + (event?.messageBytes ?? 0)).toBeGreaterThan(LIMIT);
      expect([event?.limitBytes, event?.dropped]).toEqual([LIMIT, 1]);
      expect(event?.remoteAddress).toBe('127.0.0.1');

      // The reader goes on receiving updates after the cut, and is never dropped itself.
      const seen = reader.overviews;
      await waitFor(() => reader.overviews >= seen + 5, WAIT_MS, 'more updates for the reading client');
      expect(reader.closed).toBe(false);
      expect(dropped).toHaveLength(1);

      // The stalled client, reading at last, finds its connection closed.
      stalled.read();
      await waitFor(() => stalled.closed, WAIT_MS, 'the stalled client to see its connection closed');
    },
    4 * WAIT_MS,
  );

  it('refuses a liveBufferBytes that is not a positive number, naming it', () => {
    for (const liveBufferBytes of [0, -1, Number.NaN, '1mb' as unknown as number])
      expect(() =>
        createDashboard({
          fleet: memoryFleet(),
          replayQueue: () => {
            throw new Error('no replays in this test');
          },
          liveBufferBytes,
        }),
      ).toThrow(/liveBufferBytes must be a number of bytes above 0/);
  });
});
