/**
 * The CLI on a Redis Cluster: `--redis` takes the nodes as comma-separated URLs (or one node's URL, from
 * which the cluster is found), and `REDIS_URL` stands in for `--redis`.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { dependencyTag } from '../../src/common/keys.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { deadLetter } from '../bullmq/dlq-fixtures.js';
import { CLI_BIN, cli, ensureCliBuilt, ROOT } from '../helpers/cli.js';
import { TestRedisCluster } from '../helpers/redis-cluster.js';
import { freePort } from '../helpers/redis-server.js';

const run = promisify(execFile);
const PREFIX = 'cli';
const DLQ_QUEUE = 'mail';
/** Enough dependencies that every master holds some. */
const DEPENDENCIES = Array.from({ length: 9 }, (_, i) => `dep-${i}`);
let cluster: TestRedisCluster;

beforeAll(async () => {
  await ensureCliBuilt('budget');
  cluster = await TestRedisCluster.start();
  const redis = cluster.client();
  const budget = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix: PREFIX }), minAllowance: 5 });
  const breakers = new RedisBreakerStore({ redis, prefix: PREFIX });
  const options = resolveBreakerOptions({ consecutiveFailures: 1 });
  try {
    for (const [i, name] of DEPENDENCIES.entries()) {
      for (let spent = 0; spent <= i; spent++) await budget.trySpend(name);
      await breakers.record(name, i % 2 === 0 ? 'failure' : 'success', options);
    }
    // A cluster without replicas: filings cannot wait for one.
    const store = new RedisDeadLetterStore({ redis, prefix: PREFIX, durableWrites: false });
    for (let i = 0; i < 3; i++)
      await store.file(
        deadLetter(`job-${i}`, { queue: DLQ_QUEUE }),
        { attempts: 5, deferrals: 0 },
        3_600_000,
      );
    const masters = new Set<number>();
    for (const name of DEPENDENCIES)
      masters.add((await cluster.masterOf(`${dependencyTag(PREFIX, name)}:budget`)).port);
    if (masters.size !== 3) throw new Error(`the dependencies sit on ${masters.size} masters, not 3`);
  } finally {
    await budget.close();
    redis.disconnect();
  }
});
afterAll(async () => {
  await cluster?.close();
});

/** What `budget status --json` must list: dependency i spent i + 1 of its floor of 5. */
const expectedBudgets = DEPENDENCIES.map((dependency, i) => ({
  dependency,
  spent: Math.min(i + 1, 5),
  denied: Math.max(0, i + 1 - 5),
}));

async function budgetStatus(...args: string[]): Promise<unknown> {
  const { code, stdout, stderr } = await cli('budget', 'status', '--prefix', PREFIX, '--json', ...args);
  expect(stderr).toBe('');
  expect(code).toBe(0);
  return (JSON.parse(stdout) as { dependencies: unknown[] }).dependencies;
}

describe('stormguard on a Redis Cluster', () => {
  it('budget status reads every master given the nodes as comma-separated URLs', async () => {
    const listed = await budgetStatus('--redis', cluster.url);
    expect(listed).toEqual(expectedBudgets.map((row) => expect.objectContaining(row)));
  });

  it('budget status finds the whole cluster from one node URL', async () => {
    const listed = await budgetStatus('--redis', cluster.nodes[0]!.url);
    expect(listed).toEqual(expectedBudgets.map((row) => expect.objectContaining(row)));
  });

  it('breaker status reads every master', async () => {
    const { code, stdout } = await cli(
      'breaker',
      'status',
      '--redis',
      cluster.url,
      '--prefix',
      PREFIX,
      '--json',
    );
    expect(code).toBe(0);
    const { breakers } = JSON.parse(stdout) as { breakers: { dependency: string; state: string }[] };
    expect(breakers.map((b) => [b.dependency, b.state])).toEqual(
      DEPENDENCIES.map((name, i) => [name, i % 2 === 0 ? 'open' : 'closed']),
    );
  });

  it('reads REDIS_URL when --redis is absent', async () => {
    const { stdout } = await run(
      process.execPath,
      [CLI_BIN, 'budget', 'status', '--prefix', PREFIX, '--json'],
      { cwd: ROOT, env: { ...process.env, REDIS_URL: cluster.url } },
    );
    expect((JSON.parse(stdout) as { dependencies: unknown[] }).dependencies).toEqual(
      expectedBudgets.map((row) => expect.objectContaining(row)),
    );
  });

  it.each([
    [
      'redis://127.0.0.1:7000,redis://127.0.0.1:7001/2',
      /names database 2; Redis Cluster has only database 0/,
    ],
    [
      'redis://127.0.0.1:7000,',
      /has an empty entry; list cluster nodes as redis:\/\/host:port,redis:\/\/host:port/,
    ],
    ['redis://127.0.0.1:7000,rediss://127.0.0.1:7001', /mixes redis:\/\/ and rediss:\/\//],
    ['redis://:a@127.0.0.1:7000,redis://:b@127.0.0.1:7001', /different credentials/],
    ['redis://127.0.0.1:7000,http://127.0.0.1:7001', /"http:\/\/127.0.0.1:7001" must start with redis:\/\//],
  ])('refuses --redis %j with exit code 2, naming the problem', async (value, message) => {
    const { code, stderr } = await cli('budget', 'status', '--redis', value);
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(message);
    expect(stderr).not.toMatch(/:a@|:b@/);
  });

  it('says which cluster it cannot reach, with exit code 1', async () => {
    const closed = [await freePort(), await freePort()].map((port) => `redis://127.0.0.1:${port}`).join(',');
    const { code, stderr } = await cli('budget', 'status', '--redis', closed);
    expect(code).toBe(1);
    expect(stderr).toContain(`cannot reach Redis Cluster at ${closed}`);
  });

  it('budget watch reads every master until its count is reached', async () => {
    const { code, stdout } = await cli(
      'budget',
      'watch',
      '--redis',
      cluster.url,
      '--prefix',
      PREFIX,
      '--json',
      '--count',
      '1',
      '--interval',
      '100ms',
    );
    expect(code).toBe(0);
    const frame = JSON.parse(stdout.trim().split('\n')[0]!) as { dependencies: { dependency: string }[] };
    expect(frame.dependencies.map((d) => d.dependency)).toEqual(DEPENDENCIES);
  });

  it("dlq list reads a queue's dead letters", async () => {
    const { code, stdout } = await cli(
      'dlq',
      'list',
      DLQ_QUEUE,
      '--redis',
      cluster.url,
      '--prefix',
      PREFIX,
      '--json',
    );
    expect(code).toBe(0);
    const parsed = JSON.parse(stdout) as { total: number; records: { jobId: string }[] };
    expect(parsed.total).toBe(3);
    expect(parsed.records.map((r) => r.jobId)).toEqual(['job-0', 'job-1', 'job-2']);
  });

  it("dlq replay refuses BullMQ's default prefix on a cluster, naming one that works, and replays under it", async () => {
    const refused = await cli('dlq', 'replay', DLQ_QUEUE, '--redis', cluster.url, '--prefix', PREFIX);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /BullMQ prefix "bull" with queue "mail" has no hash tag.*use the prefix "\{bull\}"/,
    );
    const replayed = await cli(
      'dlq',
      'replay',
      DLQ_QUEUE,
      '--redis',
      cluster.url,
      '--prefix',
      PREFIX,
      '--bull-prefix',
      '{bull}',
      '--json',
    );
    expect(replayed.code).toBe(0);
    expect((JSON.parse(replayed.stdout) as { moved: unknown[] }).moved).toHaveLength(3);
    const redis = cluster.client();
    const source = new Queue(DLQ_QUEUE, { connection: redis, prefix: '{bull}' });
    try {
      expect(await source.getWaitingCount()).toBe(3);
    } finally {
      await source.close();
      redis.disconnect();
    }
  });
});
