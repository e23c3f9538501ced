/**
 * Flow control in a real BullMQ worker on Redis: the whole queue paused while its dependency's breaker is
 * open, a mixed queue's jobs parked while the others flow, released in order after recovery, shadow mode
 * and the kill switch.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import type { StormguardWorkerOptions } from '../../src/bullmq/worker-options.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { flowStatusOf } from '../../src/status/flow.js';
import { readFleetStatus } from '../../src/status/read-fleet-status.js';
import { recordEvents, TestBed } from '../e2e/harness.js';
import { waitFor } from '../helpers/redis-server.js';

const bed = TestBed.perFile({ backend: 'redis' });

const policy = definePolicy({
  name: 'flow',
  maxAttempts: 30,
  backoff: { type: 'fixed', delayMs: 100 },
  jitter: 'none',
  maxAgeMs: '2m',
});

/** A dependency that is down until told otherwise, counting the calls that reach it while down. */
class Dependency {
  down = true;
  callsWhileDown = 0;
  calls = 0;
  call(): void {
    this.calls++;
    if (this.down) {
      this.callsWhileDown++;
      throw new TransientError('connect ECONNREFUSED');
    }
  }
}

function stores() {
  const prefix = `flow-${randomUUID().slice(0, 8)}`;
  const breaker = new CircuitBreaker({
    store: new RedisBreakerStore({ redis: bed.redis, prefix }),
    consecutiveFailures: 2,
    coolDownMs: 400,
    halfOpenProbes: 1,
    successesToClose: 1,
  });
  const transitions: string[] = [];
  breaker.events.on('state-change', (e) => transitions.push(`${e.from}>${e.to}`));
  return {
    breaker,
    breakerStore: new RedisBreakerStore({ redis: bed.redis, prefix }),
    flowStore: new RedisFlowStore({ redis: bed.redis, prefix }),
    transitions,
  };
}

function flowWorker(
  queueName: string,
  deps: Record<string, Dependency>,
  options: Partial<StormguardWorkerOptions>,
) {
  return bed.worker<{ n: number }>(
    queueName,
    async (_job, ctx) => {
      const dependency = ctx.dependency;
      await ctx.call(dependency, () => deps[dependency]?.call());
    },
    { policy, concurrency: 2, ...options },
  );
}

describe('flow control in a BullMQ worker', () => {
  it('pauses a queue whose jobs all need the down dependency, probes once per half-open period, and completes every job after recovery', async () => {
    const { queueName, queue, dlq } = bed.queues('pause');
    const { breaker, flowStore, transitions } = stores();
    const search = new Dependency();
    const worker = flowWorker(
      queueName,
      { search },
      {
        breaker,
        dependencies: { index: 'search' },
        flowControl: {
          store: flowStore,
          queueDependency: 'search',
          slowStartMs: 500,
          floorPerSecond: 20,
          stateCacheMs: 50,
        },
      },
    );
    const holds: string[] = [];
    worker.events.on('flow-hold', (e) => holds.push(`${e.kind}:${e.shadow}`));
    const log = recordEvents(worker.events);
    for (let n = 0; n < 20; n++) await queue.add('index', { n });
    // Down through two failed half-open probes at least.
    await waitFor(
      () => transitions.filter((t) => t === 'half-open>open').length >= 2,
      10_000,
      'two failed probes',
    );
    expect(worker.flow?.status()).toEqual([expect.objectContaining({ dependency: 'search' })]);
    search.down = false;
    await waitFor(() => log.count('completed') === 20, 15_000, 'every job to complete');
    const probes = transitions.filter((t) => t === 'open>half-open').length;
    // The calls that opened the breaker (and one more already in flight), then one probe per half-open period.
    expect(search.callsWhileDown).toBeLessThanOrEqual(2 + 1 + probes);
    expect(holds.length).toBeGreaterThan(0);
    expect(new Set(holds)).toEqual(new Set(['pause:false']));
    expect(await dlq.count()).toBe(0);
  });

  it('a worker paused for the down dependency shows in the fleet status while it holds the queue, and leaves it after recovery', async () => {
    const { queueName, queue } = bed.queues('paused-status');
    const { breaker, breakerStore, flowStore } = stores();
    const search = new Dependency();
    const worker = flowWorker(
      queueName,
      { search },
      {
        breaker,
        dependencies: { index: 'search' },
        workerOptions: { name: 'indexer-1' },
        flowControl: { store: flowStore, queueDependency: 'search', slowStartMs: 0, stateCacheMs: 50 },
      },
    );
    const log = recordEvents(worker.events);
    for (let n = 0; n < 5; n++) await queue.add('index', { n });
    const flow = flowStatusOf(flowStore);
    const scope = { dependencies: ['search'], queues: [queueName] };
    await waitFor(
      async () => ((await flow.pausedWorkers?.(scope)) ?? []).length > 0,
      10_000,
      'the paused worker to be listed',
    );
    expect(await flow.pausedWorkers?.(scope)).toEqual([
      {
        queue: queueName,
        dependency: 'search',
        worker: 'indexer-1',
        sinceMs: expect.any(Number),
        untilMs: expect.any(Number),
      },
    ]);
    const status = await readFleetStatus({ breaker: breakerStore, flow });
    const listed = status.dependencies.find((d) => d.dependency === 'search');
    expect(listed?.pausedWorkers).toBe(1);
    expect(listed?.attention).toContain('workers-paused');
    search.down = false;
    await waitFor(() => log.count('completed') === 5, 15_000, 'every job to complete');
    await waitFor(
      async () => ((await flow.pausedWorkers?.(scope)) ?? []).length === 0,
      10_000,
      'the paused worker to leave the list',
    );
    const after = await readFleetStatus({ breaker: breakerStore, flow });
    expect(after.dependencies.find((d) => d.dependency === 'search')?.pausedWorkers).toBe(0);
  });

  it('parks the down dependency’s jobs in a mixed queue while the others flow, and releases them in order after recovery', async () => {
    const { queueName, queue, dlq } = bed.queues('park');
    const { breaker, flowStore, transitions } = stores();
    const search = new Dependency();
    const mail = new Dependency();
    mail.down = false;
    const order: number[] = [];
    const worker = bed.worker<{ n: number }>(
      queueName,
      async (job, ctx) => {
        const dependency = ctx.dependency;
        await ctx.call(dependency, () => (dependency === 'search' ? search : mail).call());
        if (dependency === 'search') order.push(job.data.n);
      },
      {
        policy,
        concurrency: 1,
        breaker,
        dependencies: { index: 'search', notify: 'mail' },
        flowControl: {
          store: flowStore,
          slowStartMs: 500,
          floorPerSecond: 20,
          stateCacheMs: 50,
          releaseIntervalMs: 50,
        },
      },
    );
    const log = recordEvents(worker.events);
    let parkedHolds = 0;
    worker.events.on('flow-hold', (e) => {
      if (e.kind === 'park') parkedHolds++;
    });
    for (let n = 0; n < 10; n++) await queue.add('index', { n });
    for (let n = 0; n < 10; n++) await queue.add('notify', { n });
    await waitFor(() => mail.calls === 10, 10_000, 'every mail job to complete while search is down');
    expect(search.down).toBe(true);
    await waitFor(
      async () => (await flowStore.parked('search', queueName)) >= 7,
      10_000,
      'search jobs parked',
    );
    await waitFor(
      () => transitions.filter((t) => t === 'half-open>open').length >= 1,
      10_000,
      'a failed probe',
    );
    search.down = false;
    await waitFor(() => log.count('completed') === 20, 15_000, 'every job to complete');
    const probes = transitions.filter((t) => t === 'open>half-open').length;
    expect(search.callsWhileDown).toBeLessThanOrEqual(2 + probes);
    expect(parkedHolds).toBeGreaterThanOrEqual(7);
    expect(await flowStore.parked('search', queueName)).toBe(0);
    // Released oldest first. The first jobs failed while the breaker opened, or served as a failed probe,
    // and were parked again behind the rest; the jobs after them were parked once, in the order added.
    const parkedOnce = order.filter((n) => n >= 5);
    expect(parkedOnce).toEqual([5, 6, 7, 8, 9]);
    expect(await dlq.count()).toBe(0);
  });

  it('in shadow mode reports what it would hold and holds nothing', async () => {
    const { queueName, queue } = bed.queues('shadow');
    const { breaker, flowStore, transitions } = stores();
    const search = new Dependency();
    const worker = flowWorker(
      queueName,
      { search },
      {
        breaker,
        flowControl: { store: flowStore, queueDependency: 'search', mode: 'shadow', stateCacheMs: 50 },
      },
    );
    const holds: string[] = [];
    worker.events.on('flow-hold', (e) => holds.push(`${e.kind}:${e.shadow}`));
    const log = recordEvents(worker.events);
    for (let n = 0; n < 4; n++) await queue.add('search', { n });
    await waitFor(() => holds.length >= 2 && transitions.includes('closed>open'), 10_000, 'reported holds');
    search.down = false;
    await waitFor(() => log.count('completed') === 4, 15_000, 'every job to complete');
    expect(new Set(holds)).toEqual(new Set(['pause:true']));
    // Not held: the jobs met the breaker in ctx.call and were delayed by the policy instead.
    expect(log.of('retry').some((e) => e.cause === 'breaker-open')).toBe(true);
    expect(worker.flow?.status()).toEqual([]);
  });

  it('the fleet-wide kill switch turns it off: nothing is held', async () => {
    const { queueName, queue } = bed.queues('off');
    const { breaker, flowStore, transitions } = stores();
    await flowStore.setOff(true);
    const search = new Dependency();
    const worker = flowWorker(
      queueName,
      { search },
      { breaker, flowControl: { store: flowStore, queueDependency: 'search', stateCacheMs: 50 } },
    );
    let holds = 0;
    worker.events.on('flow-hold', () => holds++);
    const log = recordEvents(worker.events);
    for (let n = 0; n < 4; n++) await queue.add('search', { n });
    await waitFor(() => log.of('retry').some((e) => e.cause === 'breaker-open'), 10_000, 'a breaker delay');
    expect(transitions).toContain('closed>open');
    search.down = false;
    await waitFor(() => log.count('completed') === 4, 15_000, 'every job to complete');
    expect(holds).toBe(0);
  });

  it('starts the slow-start ramp when the budget that was denying a dependency stops denying', async () => {
    const { queueName, queue, dlq } = bed.queues('budget-ramp');
    const { flowStore } = stores();
    // A breaker that stays closed here: only the budget's denials mark the dependency down.
    const breaker = new CircuitBreaker({
      store: new RedisBreakerStore({ redis: bed.redis, prefix: flowStore.prefix }),
      consecutiveFailures: 100,
    });
    const budget = new RetryBudget({
      store: bed.budgetStore(),
      minAllowance: 1,
      windowMs: 2_000,
      log: false,
    });
    // The failing job fails twice, then succeeds.
    let failures = 0;
    const worker = bed.worker<{ fail: boolean }>(
      queueName,
      async (job, ctx) =>
        ctx.call('search', () => {
          if (job.data.fail && failures++ < 2) throw new TransientError('search answered 503');
        }),
      {
        policy,
        budget,
        breaker,
        dependencies: { index: 'search' },
        flowControl: { store: flowStore, queueDependency: 'search', slowStartMs: 500, stateCacheMs: 0 },
      },
    );
    const log = recordEvents(worker.events);
    // One retry a window: the job's first retry is granted, its second denied, and held (deferred past the
    // window, whatever onExhausted says), never dead-lettered: flow control enforces.
    await queue.add('index', { fail: true });
    await waitFor(
      () => log.of('retry').some((e) => e.cause === 'budget-deferred'),
      10_000,
      'the denied retry to be deferred',
    );
    expect(await dlq.count()).toBe(0);
    expect((await breaker.state('search')).state).toBe('closed');
    await waitFor(async () => (await flowStore.read('search')).down, 5_000, 'the denial to mark search down');
    expect((await flowStore.read('search')).recoveredAtMs).toBeUndefined();
    // The window slides past the denial; the next job's gate finds the budget no longer denying.
    await waitFor(async () => (await budget.state('search')).denied === 0, 10_000, 'the denials to age out');
    await queue.add('index', { fail: false });
    await waitFor(() => log.count('completed') === 2, 10_000, 'the held job and the healthy one to complete');
    expect(await dlq.count()).toBe(0);
    const flow = await flowStore.read('search');
    expect(flow.down).toBe(false);
    expect(flow.recoveredAtMs).toBeGreaterThan(0);
    expect(flow.nowMs - (flow.recoveredAtMs ?? 0)).toBeLessThan(60_000);
  });
});
