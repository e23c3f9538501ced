import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPostgresBackend, Queue } from 'bullmq';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { replayOrigin } from '../../src/bullmq/dead-letter-ids.js';
import { createDashboard } from '../../src/dashboard/handler.js';
import { PostgresBreakerStore } from '../../src/postgres/breaker-store.js';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { postgresFleet } from '../../src/postgres/fleet.js';
import { PostgresFlowStore } from '../../src/postgres/flow-store.js';
import { PostgresReplayRunStore } from '../../src/postgres/replay-run-store.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { waitFor } from '../helpers/redis-server.js';

const bed = postgresBed();
const TOKEN = 'pg-console-token';
/** A console with a token needs it for reading too: a script sends it as a bearer. */
const AS_SCRIPT = { headers: { authorization: `Bearer ${TOKEN}` } };
const QUEUE = 'pg-console';
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 8 });
});
afterAll(async () => {
  await pool?.end();
});

/** A console on PostgreSQL served on a free port, as `stormguard dashboard --postgres` serves it. */
async function openConsole(schema: string) {
  const dashboard = createDashboard({
    fleet: postgresFleet({ pool, schema }),
    queueUrl: bed.url,
    token: TOKEN,
  });
  const server: Server = createServer(dashboard);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url,
    async act<T>(path: string, body: unknown): Promise<T> {
      const session = await fetch(`${url}api/session`, AS_SCRIPT);
      const { csrf } = (await session.json()) as { csrf: string };
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'x-stormguard-csrf': csrf,
          cookie: `stormguard_csrf=${encodeURIComponent(csrf)}`,
        },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as T & { error?: string };
      if (!res.ok) throw new Error(`${path}: ${res.status} ${json.error}`);
      return json;
    },
    async run(id: string) {
      return (await (await fetch(`${url}api/replays/${id}`, AS_SCRIPT)).json()) as {
        status: string;
        moved: number;
        skipped: number;
        failures: unknown[];
      };
    },
    async close() {
      await new Promise((resolve) => server.close(resolve));
      await dashboard.close();
    },
  };
}

describe('the console on PostgreSQL', () => {
  it("shows the workers paused and the jobs parked for a dependency, from the schema's flow store", async () => {
    const schema = uniqueSchema();
    const deadLetters = new PostgresDeadLetterStore({ connection: pool, schema });
    await deadLetters.registerQueue('mixed');
    // A breaker the overview lists, and what two workers recorded in the flow store.
    const breaker = new CircuitBreaker({
      store: new PostgresBreakerStore({ connection: pool, schema }),
      consecutiveFailures: 1,
    });
    await breaker.recordFailure('search');
    const flow = new PostgresFlowStore({ connection: pool, schema });
    await flow.notePaused('search', 'index', 'indexer-1', 30_000, 15_000);
    await flow.park('search', 'mixed', 'job-1', 60_000);
    await flow.park('search', 'mixed', 'job-2', 60_000);
    const console_ = await openConsole(schema);
    try {
      const overview = (await (await fetch(`${console_.url}api/overview`, AS_SCRIPT)).json()) as {
        pausedWorkers: { queue: string; dependency: string; worker: string }[];
        parkedJobs: { queue: string; dependency: string; count: number }[];
        dependencies: {
          dependency: string;
          pausedWorkers: number;
          parkedJobs: number;
          attention: string[];
        }[];
      };
      expect(overview.pausedWorkers.map((p) => [p.dependency, p.queue, p.worker])).toEqual([
        ['search', 'index', 'indexer-1'],
      ]);
      expect(overview.parkedJobs).toEqual([{ queue: 'mixed', dependency: 'search', count: 2 }]);
      const search = overview.dependencies.find((d) => d.dependency === 'search');
      expect([search?.pausedWorkers, search?.parkedJobs]).toEqual([1, 2]);
      expect(search?.attention).toEqual(expect.arrayContaining(['workers-paused', 'jobs-parked']));
    } finally {
      await console_.close();
    }
  });

  it('keeps a bulk replay in PostgreSQL: a console stopped half-way and another started later move every record once', async () => {
    const schema = uniqueSchema();
    const store = new PostgresDeadLetterStore({ connection: pool, schema });
    const N = 30;
    for (let i = 0; i < N; i++)
      await store.file(
        sampleDeadLetter(`job-${i}`, {
          queue: QUEUE,
          reason: 'breaker-open',
          deadLetteredAt: 1_700_000_000_000 + i,
        }),
        { attempts: 1, deferrals: 0 },
        60_000,
      );
    // The workers' queue, on BullMQ 6's PostgreSQL backend: it creates BullMQ's own tables.
    const jobs = new Queue(
      QUEUE,
      { connection: { connectionString: bed.url, migrate: true } } as never,
      createPostgresBackend as never,
    );
    await jobs.getJobCounts();
    try {
      const first = await openConsole(schema);
      const preview = await first.act<{ snapshotId: string; total: number; estimateMs: number }>(
        `api/queues/${QUEUE}/replays/preview`,
        { filter: { reason: 'breaker-open' }, ratePerSecond: 10 },
      );
      expect(preview).toMatchObject({ total: N, estimateMs: 3_000 });
      const started = await first.act<{ id: string }>(`api/queues/${QUEUE}/replays`, {
        snapshotId: preview.snapshotId,
        ratePerSecond: 10,
        whenHealthy: false,
      });
      await waitFor(async () => (await first.run(started.id)).moved >= 5, 15_000, 'five records moved');
      await first.close();

      const halfway = await new PostgresReplayRunStore({ connection: pool, schema }).getRun(started.id);
      expect(halfway).toMatchObject({ status: 'pending', stoppedBecause: 'interrupted', total: N });
      expect(halfway?.moved).toBeLessThan(N);
      expect(halfway?.startedAtMs).toBeGreaterThan(0);

      const second = await openConsole(schema);
      try {
        await waitFor(
          async () => (await second.run(started.id)).status === 'done',
          20_000,
          'the run to finish',
        );
        const done = await second.run(started.id);
        expect(done.failures).toEqual([]);
        expect(done.moved + done.skipped).toBe(N);
      } finally {
        await second.close();
      }
      const originals = (await jobs.getJobs()).map((job) => replayOrigin(job).originalJobId).sort();
      expect(originals).toEqual(Array.from({ length: N }, (_, i) => `job-${i}`).sort());
      expect((await store.list(QUEUE, { limit: 100 })).records).toEqual([]);
    } finally {
      await jobs.obliterate({ force: true }).catch(() => {});
      await jobs.close();
    }
  }, 60_000);
});
