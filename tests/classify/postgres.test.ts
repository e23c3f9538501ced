import { once } from 'node:events';
import { createConnection, createServer, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classify, definePolicy } from '../../src/index.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { waitFor } from '../helpers/redis-server.js';
import { rejectionOf } from './rejection.js';

// Unknown errors are not retried here, so a retryable verdict can only come from a classifier that
// recognised what pg really raised.
const policy = definePolicy({ maxAttempts: 3, retryUnknown: false });
const verdict = (error: unknown) => classify(error, policy, 0);

const bed = postgresBed();
const open: pg.Client[] = [];

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: bed.url });
  client.on('error', () => undefined); // a terminated backend also emits; the query's rejection is what is tested
  await client.connect();
  open.push(client);
  return client;
}

beforeAll(async () => {
  const admin = await connect();
  for (const name of ['serial', 'deadlock', 'lockwait', 'duplicate']) {
    await admin.query(`CREATE TABLE ${name} (id int PRIMARY KEY, n int NOT NULL)`);
    await admin.query(`INSERT INTO ${name} VALUES (1, 0), (2, 0)`);
  }
});

afterAll(async () => {
  await Promise.all(open.map((c) => c.end().catch(() => undefined)));
});

/** Waits until `pid`'s backend is blocked on a lock, so the next statement is sure to conflict with it. */
async function blockedOnLock(observer: pg.Client, pid: number): Promise<void> {
  await waitFor(
    async () => {
      const { rows } = await observer.query<{ waiting: boolean }>(
        "SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE pid = $1",
        [pid],
      );
      return rows[0]?.waiting === true;
    },
    5_000,
    `backend ${pid} to wait on a lock`,
  );
}

const backendPid = async (client: pg.Client): Promise<number> =>
  (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? -1;

describe('classification of what pg raises against PostgreSQL', () => {
  it('a serialization failure (40001) between two SERIALIZABLE transactions is retryable', async () => {
    const [a, b] = [await connect(), await connect()];
    await a.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
    await b.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
    // Each reads what the other writes: no serial order explains both, so the second commit fails.
    await a.query('SELECT sum(n) FROM serial');
    await b.query('SELECT sum(n) FROM serial');
    await a.query('UPDATE serial SET n = n + 1 WHERE id = 1');
    await b.query('UPDATE serial SET n = n + 1 WHERE id = 2');
    await a.query('COMMIT');
    const error = await rejectionOf(b.query('COMMIT'));
    expect(error).toMatchObject({ code: '40001' });
    expect(verdict(error)).toEqual({ retryable: true, reason: 'pg-40001', family: 'database' });
  });

  it('a deadlock (40P01) is retryable', async () => {
    const [a, b, observer] = [await connect(), await connect(), await connect()];
    const pidA = await backendPid(a);
    // Look for the deadlock soon after blocking, not after the default second.
    await Promise.all([a.query("SET deadlock_timeout = '50ms'"), b.query("SET deadlock_timeout = '50ms'")]);
    await a.query('BEGIN');
    await b.query('BEGIN');
    await a.query('UPDATE deadlock SET n = 1 WHERE id = 1');
    await b.query('UPDATE deadlock SET n = 1 WHERE id = 2');
    const first = a.query('UPDATE deadlock SET n = 2 WHERE id = 2');
    await blockedOnLock(observer, pidA);
    const results = await Promise.allSettled([first, b.query('UPDATE deadlock SET n = 2 WHERE id = 1')]);
    await Promise.all([a.query('ROLLBACK'), b.query('ROLLBACK')]);
    const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ code: '40P01' });
    expect(verdict(failures[0])).toEqual({ retryable: true, reason: 'pg-40P01', family: 'database' });
  });

  it('a lock wait past lock_timeout (55P03) is retryable', async () => {
    const [holder, waiter] = [await connect(), await connect()];
    await holder.query('BEGIN');
    await holder.query('UPDATE lockwait SET n = 1 WHERE id = 1');
    await waiter.query("SET lock_timeout = '100ms'");
    const error = await rejectionOf(waiter.query('UPDATE lockwait SET n = 2 WHERE id = 1'));
    await holder.query('ROLLBACK');
    expect(error).toMatchObject({ code: '55P03' });
    expect(verdict(error)).toEqual({ retryable: true, reason: 'pg-55P03', family: 'database' });
  });

  it('a session the server terminates (pg_terminate_backend, 57P01) mid-query is retryable', async () => {
    const [victim, admin] = [await connect(), await connect()];
    const pid = await backendPid(victim);
    const running = rejectionOf(victim.query('SELECT pg_sleep(30)'));
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const error = await running;
    expect(error).toMatchObject({ code: '57P01' });
    expect(verdict(error)).toEqual({ retryable: true, reason: 'pg-57P01', family: 'database' });
  });

  it("the application's own end() under a query is not a lost connection", async () => {
    const client = new pg.Client({ connectionString: bed.url });
    await client.connect();
    const running = rejectionOf(client.query('SELECT pg_sleep(1)'));
    await client.end();
    const error = await running;
    expect((error as Error).message).toBe('Connection terminated');
    expect(verdict(error)).toEqual({ retryable: false, reason: 'unknown' });
  });

  it('a duplicate key (23505) is not retryable', async () => {
    const client = await connect();
    const error = await rejectionOf(client.query('INSERT INTO duplicate VALUES (1, 0)'));
    expect(error).toMatchObject({ code: '23505' });
    expect(verdict(error)).toEqual({ retryable: false, reason: 'pg-23505' });
  });

  it('a connection dropped in between (a proxy closing it) fails with no SQLSTATE and is retryable', async () => {
    const proxy = await dropProxy(Number(new URL(bed.url).port));
    try {
      const url = new URL(bed.url);
      url.port = String(proxy.port);
      const client = new pg.Client({ connectionString: url.href });
      client.on('error', () => undefined);
      await client.connect();
      const running = rejectionOf(client.query('SELECT pg_sleep(1)'));
      proxy.drop();
      const error = await running;
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toBe('Connection terminated unexpectedly');
      expect(error).not.toHaveProperty('code');
      expect(verdict(error)).toEqual({ retryable: true, reason: 'pg-connection-lost', family: 'database' });
    } finally {
      await proxy.close();
    }
  });
});

/**
 * A TCP proxy to `targetPort` whose `drop()` closes every client connection cleanly (a FIN, no error
 * message), as a load balancer or NAT that forgets a connection does.
 */
async function dropProxy(
  targetPort: number,
): Promise<{ port: number; drop(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const upstream = createConnection(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.once('close', () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  const address = proxy.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    drop: () => {
      for (const socket of sockets) socket.end();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      proxy.close();
      await once(proxy, 'close');
    },
  };
}
