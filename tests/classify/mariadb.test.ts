import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classify, definePolicy } from '../../src/index.js';
import { TestMariadb } from '../helpers/mariadb-server.js';
import { rejectionOf } from './rejection.js';

// Unknown errors are not retried here, so a retryable verdict can only come from a classifier that
// recognised what mysql2 really raised.
const policy = definePolicy({ maxAttempts: 3, retryUnknown: false });
const verdict = (error: unknown) => classify(error, policy, 0);

let server: TestMariadb;
const open: mysql.Connection[] = [];

async function connect(): Promise<mysql.Connection> {
  const connection = await mysql.createConnection({ ...server.connection, database: 'drivers' });
  connection.on('error', () => undefined); // a killed connection also emits; the query's rejection is what is tested
  open.push(connection);
  return connection;
}

beforeAll(async () => {
  server = await TestMariadb.start();
  const admin = await mysql.createConnection(server.connection);
  await admin.query('CREATE DATABASE drivers');
  await admin.end();
}, 60_000);

afterAll(async () => {
  await Promise.all(open.map((c) => c.end().catch(() => undefined)));
  await server?.close();
});

/** A fresh table with rows 1 and 2, so each test locks rows of its own. */
async function table(name: string): Promise<void> {
  const admin = await connect();
  await admin.query(`CREATE TABLE ${name} (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB`);
  await admin.query(`INSERT INTO ${name} VALUES (1, 0), (2, 0)`);
}

describe('classification of what mysql2 raises against MariaDB', () => {
  it('a deadlock (1213) between two transactions is retryable', async () => {
    await table('deadlock');
    const [a, b] = [await connect(), await connect()];
    await a.beginTransaction();
    await b.beginTransaction();
    await a.query('UPDATE deadlock SET n = 1 WHERE id = 1');
    await b.query('UPDATE deadlock SET n = 1 WHERE id = 2');
    const results = await Promise.allSettled([
      a.query('UPDATE deadlock SET n = 2 WHERE id = 2'),
      b.query('UPDATE deadlock SET n = 2 WHERE id = 1'),
    ]);
    await Promise.all([a.rollback(), b.rollback()]);
    const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ errno: 1213, code: 'ER_LOCK_DEADLOCK' });
    expect(verdict(failures[0])).toEqual({ retryable: true, reason: 'mysql-1213', family: 'database' });
  });

  it('a lock wait timeout (1205, innodb_lock_wait_timeout=1) is retryable', async () => {
    await table('lockwait');
    const [holder, waiter] = [await connect(), await connect()];
    await holder.beginTransaction();
    await holder.query('UPDATE lockwait SET n = 1 WHERE id = 1');
    const error = await rejectionOf(waiter.query('UPDATE lockwait SET n = 2 WHERE id = 1'));
    await holder.rollback();
    expect(error).toMatchObject({ errno: 1205, code: 'ER_LOCK_WAIT_TIMEOUT' });
    expect(verdict(error)).toEqual({ retryable: true, reason: 'mysql-1205', family: 'database' });
  });

  it('a connection the server kills mid-query is retryable', async () => {
    const [victim, admin] = [await connect(), await connect()];
    const [[{ id }]] = (await victim.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]];
    const running = rejectionOf(victim.query('SELECT SLEEP(30)'));
    await admin.query(`KILL ${id}`);
    const error = await running;
    expect(error).toMatchObject({ code: 'PROTOCOL_CONNECTION_LOST' });
    expect(verdict(error)).toEqual({ retryable: true, reason: 'mysql-connection-lost', family: 'database' });
  });

  it('a duplicate key (1062) is not retryable', async () => {
    await table('duplicate');
    const connection = await connect();
    const error = await rejectionOf(connection.query('INSERT INTO duplicate VALUES (1, 0)'));
    expect(error).toMatchObject({ errno: 1062, code: 'ER_DUP_ENTRY' });
    expect(verdict(error)).toEqual({ retryable: false, reason: 'mysql-1062' });
  });
});
