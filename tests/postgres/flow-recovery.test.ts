import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { MemoryBreakerStore } from '../../src/breaker/memory-store.js';
import { MemoryBudgetStore } from '../../src/budget/memory-store.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { FakeClock } from '../../src/common/clock.js';
import { PostgresFlowStore } from '../../src/postgres/flow-store.js';
import { FlowController } from '../../src/runtime/flow-control/controller.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 2 });
});
afterAll(async () => {
  await pool?.end();
});

const T0 = 1_700_000_000_000;

describe('flow control on PostgreSQL after a recovery', () => {
  it('marks a dependency up once its budget stops denying, though no job comes to read it (the queue drained)', async () => {
    const clock = new FakeClock(T0);
    // One retry per 10 s window; the breaker stays closed throughout.
    const budget = new RetryBudget({
      store: new MemoryBudgetStore({ clock }),
      clock,
      minAllowance: 1,
      windowMs: 10_000,
      log: false,
    });
    const breaker = new CircuitBreaker({ store: new MemoryBreakerStore({ clock }), clock });
    const store = new PostgresFlowStore({ connection: pool, schema: uniqueSchema(), prefix: 'shop', clock });
    const flow = new FlowController(
      { store, slowStartMs: 10_000, floorPerSecond: 2, stateCacheMs: 0 },
      {
        queue: 'payments',
        worker: 'w1',
        breaker,
        budget,
        clock,
        emit: () => {},
        internalError: (e) => {
          throw e;
        },
      },
    );
    try {
      expect(await flow.beforeRun('payments', { jobId: 'last', starts: 1 })).toEqual({ type: 'run' });
      // The last retries of the outage: the window's one is granted, the next denied, which marks it down.
      expect((await budget.trySpend('payments')).granted).toBe(true);
      expect((await budget.trySpend('payments')).granted).toBe(false);
      await expect.poll(async () => (await store.read('payments')).down, { timeout: 5_000 }).toBe(true);
      // The queue is drained: only the release loop runs. Once the window holds no denial, it marks it up.
      clock.advance(11_000);
      expect((await budget.state('payments')).denied).toBe(0);
      expect(await flow.releaseOnce(async () => 'gone')).toBe(0);
      expect(await store.read('payments')).toEqual({
        down: false,
        recoveredAtMs: T0 + 11_000,
        nowMs: T0 + 11_000,
        off: false,
      });
    } finally {
      await flow.stop();
    }
  });
});
