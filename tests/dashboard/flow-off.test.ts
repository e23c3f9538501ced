import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { createDashboard } from '../../src/dashboard/handler.js';
import { redisFleet } from '../../src/redis/fleet.js';
import type { FleetStatus } from '../../src/status/types.js';
import { TestRedis } from '../helpers/redis-server.js';

let server: TestRedis;
let redis: Redis;

beforeAll(async () => {
  server = await TestRedis.start();
  redis = new Redis(server.connection);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.close();
});

/** The console's overview over `fleet`, read once through its API. */
async function overviewOf(fleet: ReturnType<typeof redisFleet>): Promise<FleetStatus> {
  const dashboard = createDashboard({ fleet, updateIntervalMs: 60_000 });
  const http = createServer(dashboard);
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  try {
    const res = await fetch(`http://127.0.0.1:${(http.address() as AddressInfo).port}/api/overview`);
    expect(res.status).toBe(200);
    return (await res.json()) as FleetStatus;
  } finally {
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
    await dashboard.close();
  }
}

it("the console's overview says when flow control is off fleet-wide and which dependency is marked down", async () => {
  const fleet = redisFleet({ redis, prefix: `flow-off-${process.pid}` });
  const options = { consecutiveFailures: 1, coolDownMs: 30_000 };
  await fleet.breaker.record('search', 'failure', resolveBreakerOptions(options));
  expect((await overviewOf(fleet)).flowControl).toEqual({ on: true });

  // What `stormguard flow off` and a worker that saw search fail write.
  await fleet.flow.setOff(true);
  await fleet.flow.markDown('search');
  const overview = await overviewOf(fleet);
  expect(overview.flowControl).toEqual({ on: false });
  const search = overview.dependencies.find((d) => d.dependency === 'search');
  expect(search?.flow).toEqual({ down: true });
  expect(search?.attention).toEqual(['breaker-open', 'marked-down']);
  await fleet.close();
});
