import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboard } from '../../src/dashboard/handler.js';
import { PostgresAuditLog } from '../../src/postgres/audit-log.js';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { postgresFleet } from '../../src/postgres/fleet.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
});
afterAll(async () => {
  await pool?.end();
});

const STATE = { attempts: 1, deferrals: 0, starts: 1 };

describe('the console on PostgreSQL with a prefix', () => {
  it("reads the prefix's dead letters and audit log, not the default prefix's", async () => {
    const schema = uniqueSchema();
    const now = Date.now();
    // What workers and `stormguard dlq replay --prefix shop` write under the prefix `shop`...
    const shop = new PostgresDeadLetterStore({ connection: pool, schema, prefix: 'shop' });
    await shop.registerQueue('payments');
    const { id } = await shop.file(
      sampleDeadLetter('job-1', {
        queue: 'payments',
        createdAt: now - 2_000,
        firstFailedAt: now - 1_000,
        deadLetteredAt: now,
      }),
      STATE,
      60_000,
    );
    await new PostgresAuditLog({ connection: pool, schema, prefix: 'shop' }).append({
      by: 'alice',
      action: 'dlq.replay',
      target: 'payments',
    });
    // ...and, beside it, another application's queue under the default prefix.
    await new PostgresDeadLetterStore({ connection: pool, schema }).registerQueue('other-app');

    const dashboard = createDashboard({
      fleet: postgresFleet({ pool, schema, prefix: 'shop' }),
    });
    const server: Server = createServer(dashboard);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
    const get = async (path: string) => {
      const res = await fetch(`${url}${path}`);
      expect(res.status, path).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    };
    try {
      const { queues } = (await get('queues')) as { queues: { queue: string; count: number }[] };
      expect(queues.map((q) => [q.queue, q.count])).toEqual([['payments', 1]]);
      const page = (await get('queues/payments/records')) as { records: { id: string; jobId: string }[] };
      expect(page.records.map((r) => [r.id, r.jobId])).toEqual([[id, 'job-1']]);
      const audit = (await get('audit')) as { entries: { by: string; action: string; target: string }[] };
      expect(audit.entries.map((e) => [e.by, e.action, e.target])).toEqual([
        ['alice', 'dlq.replay', 'payments'],
      ]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await dashboard.close();
    }
  });
});
