/**
 * What the console's two hot requests cost with many dead letters, over HTTP against the console's own
 * handler on a redis-server this script spawns: the first page of a filtered list (by reason, by
 * dependency, by job name; the filtered records are 1 % of the queue) and one overview read (the
 * fleet-status read model: budgets, breakers, counts by reason and dependency, over a handful of
 * dependencies with budget and breaker state). Measured at `--records` and at a tenth of it, side by side,
 * to show neither grows with the queue. The baseline update lists budgets and breakers the way the stores
 * did before their dependency registry: a SCAN of the whole keyspace for each.
 *
 *   npx tsx bench/dashboard/index.ts [--records 100000] [--rounds 20] [--json]
 */
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { createDashboard } from '../../src/dashboard/handler.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import {
  budgetKeyPattern,
  dependencyKeyPattern,
  dependencyOfBudgetKey,
} from '../../src/redis/budget-keys.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { redisFleet } from '../../src/redis/fleet.js';
import { scanKeys } from '../../src/redis/scan.js';
import type { DeadLetterRecord } from '../../src/runtime/contracts.js';
import type { Fleet } from '../../src/status/fleet.js';
import { readFleetStatus } from '../../src/status/read-fleet-status.js';
import type { FleetStatusSources } from '../../src/status/types.js';
import { TestRedis } from '../../tests/helpers/redis-server.js';
import { benchArgs, formatTable, median } from '../common.js';

const { size: records, rounds, json } = benchArgs({ size: ['records', 100_000] });

const server = await TestRedis.start();
const redis = new Redis(server.url, { maxRetriesPerRequest: null });

function record(queue: string, i: number): DeadLetterRecord {
  const rare = i % 100 === 0;
  return {
    jobId: `doc-${i}`,
    queue,
    name: rare ? 'rare-job' : 'reindex',
    data: { docId: i },
    opts: {},
    reason: rare ? 'permanent' : 'budget-exhausted',
    detail: 'retry budget for search exhausted',
    lastError: {
      name: 'TransientError',
      message: 'timeout',
      classification: { retryable: true, reason: 'ETIMEDOUT' },
    },
    attemptsMade: 1,
    dependency: rare ? 'rare-dep' : 'search',
    createdAt: i,
    deadLetteredAt: 1_700_000_000_000 + i,
    replays: 0,
  };
}

async function fill(prefix: string, queue: string, n: number): Promise<void> {
  const store = new RedisDeadLetterStore({ redis, prefix });
  for (let i = 0; i < n; i += 500)
    await Promise.all(
      Array.from({ length: Math.min(500, n - i) }, (_, k) =>
        store.file(record(queue, i + k), { attempts: 1, deferrals: 0 }, 3_600_000),
      ),
    );
}

/** The dependencies the fleet has budget and breaker state for: the two the dead letters name, and more. */
const DEPENDENCIES = ['search', 'rare-dep', 'mail', 'crm', 'payments'];

async function writeDependencyState(prefix: string): Promise<void> {
  const budget = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix }) });
  const breakers = new RedisBreakerStore({ redis, prefix });
  for (const dependency of DEPENDENCIES) {
    budget.recordSuccess(dependency, 100);
    await budget.trySpend(dependency);
    await breakers.record(dependency, 'success', resolveBreakerOptions({}));
  }
  await budget.close();
}

/** The status sources as they listed before the registry: every listing a SCAN of the whole keyspace. */
function scanningStatus(fleet: Fleet, prefix: string): FleetStatusSources {
  const budgets = new RedisBudgetStore({ redis, prefix });
  const breakers = new RedisBreakerStore({ redis, prefix });
  return {
    ...fleet.status,
    budget: {
      read: (dependency) => budgets.read(dependency),
      async dependencies() {
        const keys = await scanKeys(redis, budgetKeyPattern(prefix));
        return keys.flatMap((key) => dependencyOfBudgetKey(prefix, key) ?? []).sort();
      },
    },
    breaker: {
      // The SCAN the listing made, then the same reads of each breaker it found.
      async list() {
        await scanKeys(redis, dependencyKeyPattern(prefix, ':breaker'));
        return breakers.list();
      },
    },
  };
}

async function measure(prefix: string, n: number) {
  await fill(prefix, 'index', n);
  await writeDependencyState(prefix);
  const fleet = redisFleet({ redis, prefix });
  const baseline = scanningStatus(fleet, prefix);
  const handler = createDashboard({ fleet });
  const http = createServer(handler);
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  const address = http.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const time = async (path: string) => {
    const samples: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const t0 = performance.now();
      const res = await fetch(`${base}${path}`);
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
      samples.push(performance.now() - t0);
    }
    return median(samples);
  };
  const rows = {
    reason: await time('/api/queues/index/records?reason=permanent&limit=50'),
    dependency: await time('/api/queues/index/records?dependency=rare-dep&limit=50'),
    name: await time('/api/queues/index/records?name=rare-job&limit=50'),
    // One update: the read each SSE tick makes (the HTTP overview answers from the latest one). The
    // registry and the baseline alternate, so load on the machine falls on both alike.
    ...(await (async () => {
      const registry: number[] = [];
      const scanning: number[] = [];
      const first = await readFleetStatus(fleet.status);
      if (first.dependencies.length !== DEPENDENCIES.length || first.errors.length > 0)
        throw new Error(`overview read ${JSON.stringify(first.dependencies.map((d) => d.dependency))}`);
      for (let i = 0; i < rounds; i++) {
        let t0 = performance.now();
        await readFleetStatus(fleet.status);
        registry.push(performance.now() - t0);
        t0 = performance.now();
        await readFleetStatus(baseline);
        scanning.push(performance.now() - t0);
      }
      return { overview: median(registry), overviewScan: median(scanning) };
    })()),
  };
  http.close();
  await handler.close();
  return rows;
}

try {
  const small = await measure('small', Math.round(records / 10));
  const large = await measure('large', records);
  if (json) console.log(JSON.stringify({ records, rounds, small, large }));
  else {
    const ms = (x: number) => `${x.toFixed(1)} ms`;
    console.log(
      formatTable([
        [`median of ${rounds}`, `${Math.round(records / 10)} records`, `${records} records`, 'goal'],
        ['first page, filter by reason', ms(small.reason), ms(large.reason), '< 200 ms'],
        ['first page, filter by dependency', ms(small.dependency), ms(large.dependency), '< 200 ms'],
        ['first page, filter by job name', ms(small.name), ms(large.name), '< 200 ms'],
        ['one overview update (read model)', ms(small.overview), ms(large.overview), '< 50 ms'],
        ['  baseline: listing by SCAN', ms(small.overviewScan), ms(large.overviewScan), ''],
      ]),
    );
  }
} finally {
  redis.disconnect();
  await server.close();
}
