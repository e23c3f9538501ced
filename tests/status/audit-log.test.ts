import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { describeAuditLog } from '../../src/audit/audit-log.case.js';
import { MemoryAuditLog } from '../../src/audit/memory-audit-log.js';
import { PostgresAuditLog } from '../../src/postgres/audit-log.js';
import { RedisAuditLog } from '../../src/redis/audit-log.js';
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

describeAuditLog('MemoryAuditLog', async (clock, maxEntries) => ({
  log: new MemoryAuditLog({ clock, maxEntries }),
  close: async () => {},
}));

describeAuditLog('RedisAuditLog', async (clock, maxEntries) => ({
  log: new RedisAuditLog({ redis, prefix: `audit-${process.pid}-${prefixes++}`, clock, maxEntries }),
  close: async () => {},
}));

describeAuditLog('PostgresAuditLog', async (clock, maxEntries) => ({
  log: new PostgresAuditLog({ connection: pool, schema: uniqueSchema(), timeOverride: clock, maxEntries }),
  close: async () => {},
}));
