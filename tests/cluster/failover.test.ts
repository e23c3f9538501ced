/**
 * A master of a Redis Cluster is killed (SIGKILL) while three worker processes run: its replica is promoted, and
 * no dead-letter record or idempotency outcome stormguard acknowledged is lost; the budget degrades and
 * recovers on its own. Figures for docs/benchmarks.md come from `bench/failover`, which runs the same scenario.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestRedisCluster } from '../helpers/redis-cluster.js';
import { runFailover } from './failover-run.js';

let cluster: TestRedisCluster;
beforeAll(async () => {
  cluster = await TestRedisCluster.start({ replicas: 1 });
});
afterAll(async () => {
  await cluster?.close();
});

describe('a master failover under a running fleet', () => {
  it('loses no dead letter or idempotency outcome, and the budget recovers on its own', async () => {
    const figures = await runFailover(cluster, { jobs: 400 });
    expect(figures).toMatchObject({
      deadLettersLost: 0,
      deadLettersDoubled: 0,
      outcomesLost: 0,
      sideEffectsRepeated: 0,
      // Redis errors mid-failover are retried, never taken for the job's fault.
      unexpectedDeadLetters: [],
      recovered: true,
    });
    expect(figures.completed + figures.deadLettersExpected).toBe(figures.added);
    // The budget's key was on the killed master: at least one worker's budget noticed.
    expect(figures.workersDegraded).toBeGreaterThan(0);
  }, 120_000);
});
