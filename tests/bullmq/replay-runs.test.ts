import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { MemoryAuditLog } from '../../src/audit/memory-audit-log.js';
import { bullmqReplayQueue } from '../../src/bullmq/bullmq-replay-queue.js';
import { replayOrigin } from '../../src/bullmq/dead-letter-ids.js';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { FakeClock } from '../../src/common/clock.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisReplayRunStore } from '../../src/redis/replay-run-store.js';
import { ReplayRunner } from '../../src/runtime/replay/replay-runner.js';
import {
  createReplayRun,
  previewReplay,
  runReplay,
  startReplayRun,
} from '../../src/runtime/replay/replay-runs.js';
import { MemoryReplayRunStore } from '../../src/runtime/replay-runs.js';
import { waitFor } from '../helpers/redis-server.js';
import { deadLetter, redisForFile, uniqueQueue } from './dlq-fixtures.js';

const env = redisForFile();
let prefixes = 0;

describe('server-side bulk replay runs', () => {
  it('previews a snapshot, then moves every record exactly once across an interrupted run, a crashed owner and a second process', async () => {
    const queue = uniqueQueue('runs');
    const prefix = `runs-${process.pid}-${prefixes++}`;
    const clock = new FakeClock(1_700_000_000_000);
    const sleep = async (ms: number) => {
      clock.advance(ms);
    };
    // "Process" one: its own connection, stores and queue.
    const redisA = new Redis(env.server.connection);
    const storeA = new RedisDeadLetterStore({ redis: redisA, prefix });
    const runsA = new RedisReplayRunStore({ redis: redisA, prefix });
    const jobsA = new Queue(queue, { connection: env.connection });
    const dlq = deadLetterQueue(queue, { store: storeA, queue: jobsA });
    for (let i = 0; i < 60; i++)
      await dlq.add(
        deadLetter(`job-${i}`, {
          queue,
          deadLetteredAt: 10_000 + i,
          reason: i < 40 ? 'breaker-open' : 'max-attempts',
          dependency: i % 2 === 0 ? 'search' : 'mail',
        }),
      );
    const audit = new MemoryAuditLog({ clock });

    expect(await previewReplay(storeA, queue, {}, { ratePerSecond: 20 })).toEqual({
      queue,
      filter: {},
      total: 60,
      byReason: { 'breaker-open': 40, 'max-attempts': 20 },
      byDependency: { search: 30, mail: 30 },
      malformed: 0,
      ratePerSecond: 20,
      estimatedMs: 3_000,
    });
    const created = await createReplayRun({ store: storeA, runs: runsA, audit }, queue, {
      ratePerSecond: 20,
      by: 'alice',
      why: 'search is back',
      clock,
    });
    expect(created).toMatchObject({ status: 'pending', total: 60, cursor: 0, createdBy: 'alice' });
    // Dead-lettered after the snapshot: not swept up by this run.
    for (let i = 60; i < 63; i++)
      await dlq.add(deadLetter(`late-${i}`, { queue, deadLetteredAt: 20_000 + i }));

    // Process one stops after 30 records (a deploy, Ctrl-C): its progress is stored.
    const stop = new AbortController();
    let moved = 0;
    const events = {
      emit: () => {
        if (++moved === 30) stop.abort();
      },
    };
    const stopped = await runReplay(
      { store: storeA, runs: runsA, queue, jobs: bullmqReplayQueue(jobsA), events, audit },
      created.id,
      {
        owner: 'a',
        signal: stop.signal,
        clock,
        sleep,
      },
    );
    expect(stopped).toMatchObject({
      status: 'pending',
      cursor: 30,
      moved: 30,
      stoppedBecause: 'interrupted',
    });

    // It is taken up again and "crashes" holding the lease (as a killed process leaves it).
    const taken = await runsA.updateRun({
      ...stopped!,
      status: 'running',
      owner: 'a',
      leaseUntilMs: clock.now() + 30_000,
    });
    expect(taken).toBeDefined();
    await jobsA.close();
    await dlq.close();
    redisA.disconnect();

    // Process two: everything of its own. While the dead owner's lease holds, it leaves the run alone.
    const redisB = new Redis(env.server.connection);
    const storeB = new RedisDeadLetterStore({ redis: redisB, prefix });
    const runsB = new RedisReplayRunStore({ redis: redisB, prefix });
    const jobsB = new Queue(queue, { connection: env.connection });
    try {
      const target = { store: storeB, runs: runsB, queue, jobs: bullmqReplayQueue(jobsB), audit };
      const blocked = await runReplay(target, created.id, { owner: 'b', clock, sleep });
      expect(blocked).toMatchObject({ owner: 'a', cursor: 30 });
      clock.advance(30_001);
      const finished = await runReplay(target, created.id, { owner: 'b', clock, sleep });
      expect(finished).toMatchObject({
        status: 'done',
        cursor: 60,
        moved: 60,
        skipped: 0,
        failed: 0,
        failures: [],
      });

      const originals = (await jobsB.getJobs()).map((job) => replayOrigin(job).originalJobId).sort();
      expect(originals).toEqual(Array.from({ length: 60 }, (_, i) => `job-${i}`).sort());
      const left = await storeB.list(queue, { limit: 100 });
      expect(left.records.map((r) => r.jobId)).toEqual(['late-60', 'late-61', 'late-62']);
      // Run again, it changes nothing.
      expect(await runReplay(target, created.id, { owner: 'c', clock, sleep })).toMatchObject({
        status: 'done',
      });
      expect(await jobsB.count()).toBe(60);
      const { entries } = await audit.list({ limit: 10 });
      expect(entries.map((e) => [e.action, e.by, e.detail?.run])).toEqual([
        ['replay.finish', 'alice', created.id],
        ['replay.create', 'alice', created.id],
      ]);
    } finally {
      await jobsB.obliterate({ force: true });
      await jobsB.close();
      redisB.disconnect();
    }
  });

  it('a runner goes on with a started run nobody holds, however many runs came after it', async () => {
    const queue = uniqueQueue('resume');
    const prefix = `runs-${process.pid}-${prefixes++}`;
    const redis = new Redis(env.server.connection);
    const store = new RedisDeadLetterStore({ redis, prefix });
    const runs = new RedisReplayRunStore({ redis, prefix });
    const jobs = new Queue(queue, { connection: env.connection });
    const dlq = deadLetterQueue(queue, { store, queue: jobs });
    const runner = new ReplayRunner({ store, runs, jobs: () => bullmqReplayQueue(jobs), pollMs: 50 });
    try {
      for (let i = 0; i < 3; i++)
        await dlq.add(deadLetter(`job-${i}`, { queue, deadLetteredAt: 10_000 + i }));
      // Started by a process that stopped before running it.
      const started = await createReplayRun({ store, runs }, queue, { by: 'alice' });
      await startReplayRun({ runs }, started.id, { by: 'alice' });
      // Then 100 previews, never started (an operator trying filters, say).
      for (let i = 0; i < 100; i++) await createReplayRun({ store, runs }, queue, { name: `nothing-${i}` });

      runner.watch();
      await waitFor(
        async () => (await runs.getRun(started.id))?.status === 'done',
        10_000,
        'the started run to be run to its end',
      );
      expect(await runs.getRun(started.id)).toMatchObject({ moved: 3, cursor: 3 });
      expect(await store.count(queue)).toBe(0);
    } finally {
      await runner.close();
      await jobs.close();
      redis.disconnect();
    }
  });

  it('a run started from a preview waits for an unhealthy dependency, showing it and renewing its lease, so no other runner takes it meanwhile', async () => {
    const queue = uniqueQueue('wait');
    const prefix = `runs-${process.pid}-${prefixes++}`;
    const clock = new FakeClock(1_700_000_000_000);
    const store = new RedisDeadLetterStore({ redis: env.redis, prefix });
    const runs = new MemoryReplayRunStore();
    const jobs = new Queue(queue, { connection: env.connection });
    const dlq = deadLetterQueue(queue, { store, queue: jobs });
    const audit = new MemoryAuditLog({ clock });
    try {
      for (let i = 0; i < 3; i++)
        await dlq.add(deadLetter(`w-${i}`, { queue, reason: 'breaker-open', deadLetteredAt: 10_000 + i }));
      const preview = await createReplayRun({ store, runs }, queue, { reason: 'breaker-open', clock });
      const started = await startReplayRun({ runs, audit }, preview.id, {
        ratePerSecond: 2,
        whenHealthy: true,
        by: 'bob',
        clock,
      });
      expect(started).toMatchObject({
        ratePerSecond: 2,
        whenHealthy: true,
        startedBy: 'bob',
        startedAtMs: clock.now(),
        preview: { ratePerSecond: 2, estimatedMs: 1_500 },
      });
      await expect(startReplayRun({ runs }, preview.id, { clock })).rejects.toThrow(/has started already/);

      // search stays down for five minutes: ten times the lease.
      const healthyAt = clock.now() + 300_000;
      const seen: { waitingFor?: string; leaseLeftMs: number; other?: string }[] = [];
      const target = { store, runs, queue, jobs: bullmqReplayQueue(jobs), audit };
      const sleep = async (ms: number) => {
        clock.advance(ms);
        const run = await runs.getRun(preview.id);
        if (clock.now() < healthyAt && run) {
          // Another process trying meanwhile finds it held, and leaves it.
          const other = await runReplay(target, preview.id, { owner: 'b', clock, sleep: async () => {} });
          seen.push({
            ...(run.waitingFor ? { waitingFor: run.waitingFor } : {}),
            leaseLeftMs: (run.leaseUntilMs ?? 0) - clock.now(),
            ...(other?.owner ? { other: other.owner } : {}),
          });
        }
      };
      const done = await runReplay(target, preview.id, {
        owner: 'a',
        leaseMs: 30_000,
        clock,
        sleep,
        whenHealthy: { pollMs: 1_000, isHealthy: () => clock.now() >= healthyAt },
      });
      expect(done).toMatchObject({ status: 'done', moved: 3, failed: 0, startedBy: 'bob' });
      expect(done).not.toHaveProperty('waitingFor');
      expect(seen.length).toBeGreaterThan(250);
      expect(seen.filter((s) => !(s.waitingFor === 'search' && s.other === 'a'))).toEqual([]);
      expect(Math.min(...seen.map((s) => s.leaseLeftMs))).toBeGreaterThan(0);
      const { entries } = await audit.list({ limit: 10 });
      expect(entries.map((e) => [e.action, e.by])).toEqual([
        ['replay.finish', 'anonymous'],
        ['replay.start', 'bob'],
      ]);
    } finally {
      await jobs.obliterate({ force: true });
      await jobs.close();
    }
  });

  it('leaves records filed in their safe form out of a run, counting them in the preview', async () => {
    const queue = uniqueQueue('runs');
    const store = new RedisDeadLetterStore({ redis: env.redis, prefix: `runs-${process.pid}-${prefixes++}` });
    await store.registerQueue(queue);
    const state = { attempts: 1, deferrals: 0 };
    await store.file(
      deadLetter('kept', { queue, reason: 'breaker-open', dependency: 'search' }),
      state,
      60_000,
    );
    await store.file(
      deadLetter('withheld', {
        queue,
        reason: 'breaker-open',
        dependency: 'search',
        data: { stormguard: 'withheld', why: 'the redaction hook failed (TypeError)' },
      }),
      state,
      60_000,
    );
    expect(await previewReplay(store, queue, {})).toEqual({
      queue,
      filter: {},
      total: 1,
      byReason: { 'breaker-open': 1 },
      byDependency: { search: 1 },
      malformed: 0,
      withheld: 1,
    });
  });
});
