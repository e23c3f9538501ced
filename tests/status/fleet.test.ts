import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresFleet } from '../../src/postgres/fleet.js';
import { redisFleet } from '../../src/redis/fleet.js';
import { describeFleet } from '../../src/status/fleet.case.js';
import { memoryFleet } from '../../src/status/memory-fleet.js';
import { readFleetStatus } from '../../src/status/read-fleet-status.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { TestRedis } from '../helpers/redis-server.js';

let server: TestRedis;
let redis: Redis;
let prefixes = 0;
const bed = postgresBed();
let pool: pg.Pool;

beforeAll(async () => {
  server = await TestRedis.start();
  redis = new Redis(server.connection);
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
});
afterAll(async () => {
  redis?.disconnect();
  await server?.close();
  await pool?.end();
});

describeFleet('memory', 'memory', async () => {
  // Memory fleets share nothing: one per prefix, as separate keyspaces would be.
  return { open: (prefix) => memoryFleet({ prefix }), close: async () => {} };
});

describeFleet('Redis, on your client,', 'redis', async () => {
  // A keyspace of its own per test: the prefixes are namespaced under a fresh one.
  const space = `fleet-${process.pid}-${prefixes++}`;
  return { open: (prefix) => redisFleet({ redis, prefix: `${space}-${prefix}` }), close: async () => {} };
});

describeFleet('Redis, from a URL,', 'redis', async () => {
  const space = `fleet-url-${process.pid}-${prefixes++}`;
  return {
    open: (prefix) => redisFleet({ redis: server.url, prefix: `${space}-${prefix}` }),
    close: async () => {},
  };
});

describeFleet('PostgreSQL, on your pool,', 'postgres', async () => {
  const schema = uniqueSchema();
  return { open: (prefix) => postgresFleet({ pool, schema, prefix }), close: async () => {} };
});

describeFleet('PostgreSQL, from a connection string,', 'postgres', async () => {
  const schema = uniqueSchema();
  return {
    open: (prefix) => postgresFleet({ connectionString: bed.url, schema, prefix }),
    close: async () => {},
  };
});

describe('closing a fleet', () => {
  it('quits the Redis client it opened from a URL, once however often it is closed', async () => {
    const fleet = redisFleet({ redis: server.url, prefix: `close-${process.pid}` });
    await readFleetStatus(fleet.status, { throwOnError: true });
    await Promise.all([fleet.close(), fleet.close()]);
    await expect(fleet.redis.ping()).rejects.toThrow('Connection is closed');
  });

  it('leaves your Redis client open', async () => {
    const fleet = redisFleet({ redis, prefix: `close-${process.pid}` });
    await fleet.close();
    expect(await redis.ping()).toBe('PONG');
  });

  it('ends the pool it opened from a connection string, and leaves your pool open', async () => {
    const schema = uniqueSchema();
    const own = postgresFleet({ connectionString: bed.url, schema });
    expect(own.connectionString).toBe(bed.url);
    await readFleetStatus(own.status, { throwOnError: true });
    await own.close();
    expect(own.pool.ended).toBe(true);

    const yours = postgresFleet({ pool, schema });
    await yours.close();
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});

describe('fleet options', () => {
  it('takes a pool or a connection string, exactly one', () => {
    expect(() => postgresFleet({})).toThrow('postgresFleet: give `pool`');
    expect(() => postgresFleet({ pool, connectionString: bed.url })).toThrow('one of them');
    expect(() => postgresFleet({ connection: pool } as never)).toThrow(
      'postgresFleet: unknown option "connection": give your pg.Pool as `pool`',
    );
  });

  it('names a misplaced or misspelt option', () => {
    expect(() => redisFleet({ redis, schema: 'x' } as never)).toThrow(
      'redisFleet: unknown option "schema": a PostgreSQL option',
    );
    expect(() => redisFleet({ redis, prefx: 'x' } as never)).toThrow('did you mean "prefix"?');
    expect(() => postgresFleet({ pool, schema: 'Bad' })).toThrow('schema "Bad"');
  });
});
