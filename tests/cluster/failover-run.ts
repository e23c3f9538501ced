/**
 * A master failover under a running fleet, as the failover test and `bench/failover` run it (free of
 * vitest). Three worker processes (tests/cluster/failover-worker.ts, each its own Node process with its own
 * connections, budget and stores) process a mixed stream of jobs on a Redis Cluster with a replica per
 * master; mid-stream the master holding the queue's dead letters and the dependency's budget is killed
 * (SIGKILL), its replica is promoted, and the killed node comes back as a replica. The run reports what
 * stormguard's guarantees are about: dead letters and idempotency outcomes lost or doubled, and how long
 * the budgets ran degraded, from what each process tells over IPC.
 */
import { Queue } from 'bullmq';
import type { Cluster } from 'ioredis';
import { dependencyTag, queueTag } from '../../src/common/keys.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisIdempotencyStore } from '../../src/redis/idempotency-store.js';
import { IpcProcess } from '../helpers/ipc-process.js';
import type { TestRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/redis-server.js';
import type { FailoverWorkerConfig } from './failover-worker.js';

/** What one failover run measured. */
export interface FailoverFigures {
  jobs: number;
  /** Jobs BullMQ acknowledged adding (an add refused mid-failover is not retried). */
  added: number;
  workers: number;
  /** From the SIGKILL until every slot is served by a live master again, ms. */
  promotionMs: number;
  /** From the SIGKILL until the promoted master has a replica in sync again (the killed node, back), ms. */
  replicaBackMs: number;
  completed: number;
  /** Jobs that ended failed (each must be dead-lettered once), those without a record, those with two. */
  deadLettersExpected: number;
  deadLettersLost: number;
  deadLettersDoubled: number;
  /** Jobs run under the idempotency guard, outcomes missing afterwards, side effects run more than once. */
  onceJobs: number;
  /** Outcomes the store acknowledged (stored, and on a replica with durable writes) missing afterwards. */
  outcomesLost: number;
  /**
   * Outcomes the store did not acknowledge: the write failed or no replica confirmed it in time, which the
   * guard reports (`outcome-not-stored`) while the job still completes with its value. And how many of those
   * were missing afterwards (lost with the killed master): a replay of such a job would run it again.
   */
  outcomesNotAcknowledged: number;
  outcomesNotAcknowledgedMissing: number;
  sideEffectsRepeated: number;
  /** Longest time one worker's budget was degraded, ms, and how many of the workers degraded at all. */
  degradedMs: number;
  workersDegraded: number;
  /** Retries the budgets granted, and refused, from their local fallback while degraded. */
  grantedWhileDegraded: number;
  deniedWhileDegraded: number;
  /** Whether every budget had recovered on its own by the end. */
  recovered: boolean;
  /** Bookkeeping writes a store refused during the failover (the job was tried again later). */
  bookkeepingRetries: number;
  /** Dead-letter records by reason. */
  deadLetterReasons: Record<string, number>;
  /** The last errors of jobs dead-lettered that were not meant to be (the failover's casualties). */
  unexpectedDeadLetters: string[];
  /**
   * BullMQ's own loss window (with `bullmqOnVictim`): adds BullMQ acknowledged that the promoted replica
   * never saw, and jobs that ran to completion once and then again (their completion was lost).
   */
  bullmq: { addsLost: number; completionsLost: number };
  /**
   * Jobs the failover touched: those that ran more often than their kind needs (an attempt cut off, a
   * bookkeeping write refused and the job run again) or were dead-lettered when they should not have been.
   */
  jobsAffected: number;
  /** Total wall time of the run, ms. */
  totalMs: number;
}

/** Options of {@link runFailover}. */
export interface FailoverOptions {
  /** Jobs in the stream (a multiple of 4). Default 800. */
  jobs?: number;
  /** Worker count. Default 3. */
  workers?: number;
  /** The stores' `durableWrites` (default: on, as on any Cluster). */
  durableWrites?: boolean;
  /** Put BullMQ's own keys on the killed master too, to measure BullMQ's loss window. Default false. */
  bullmqOnVictim?: boolean;
}

const PREFIX = 'fo';
const QUEUE = 'failover';
/** The job kinds of the stream, by name: how each behaves is in the worker process. */
export const KINDS = ['ok', 'permanent', 'flaky', 'once'] as const;
type Kind = (typeof KINDS)[number];
/** Processor runs each kind needs when nothing goes wrong: a flaky job fails its first attempt. */
const RUNS_NEEDED: Record<Kind, number> = { ok: 1, permanent: 1, flaky: 2, once: 1 };

/** The first name `candidate(i)` whose key sits (or does not sit, with `onIt` false) on `port`. */
async function pick(
  cluster: TestRedisCluster,
  port: number,
  onIt: boolean,
  candidate: (i: number) => { name: string; key: string },
): Promise<string> {
  for (let i = 0; i < 1_000; i++) {
    const { name, key } = candidate(i);
    if (((await cluster.masterOf(key)).port === port) === onIt) return name;
  }
  throw new Error('no candidate name lands where asked');
}

/**
 * Runs the failover on `cluster` (three masters, one replica each; left healthy, its killed node back as a
 * replica). `jobs` are added in a steady stream; the master is killed once a quarter of them ended.
 */
export async function runFailover(
  cluster: TestRedisCluster,
  options: FailoverOptions = {},
): Promise<FailoverFigures> {
  const jobs = options.jobs ?? 800;
  const workerCount = options.workers ?? 3;
  const started = Date.now();
  const victim = await cluster.masterOf(`${queueTag(PREFIX, QUEUE)}:dl:rec`);
  const dependency = await pick(cluster, victim.port, true, (i) => ({
    name: `search-${i}`,
    key: `${dependencyTag(PREFIX, `search-${i}`)}:budget`,
  }));
  // BullMQ's own keys stay on a surviving master unless asked: the run is about stormguard's writes.
  const bullPrefix = await pick(cluster, victim.port, options.bullmqOnVictim === true, (i) => ({
    name: `{bull${i}}`,
    key: `{bull${i}}:${QUEUE}:wait`,
  }));
  const clients: Cluster[] = [];
  const client = (bullmq: boolean) => {
    const made = cluster.client(bullmq ? { redisOptions: { maxRetriesPerRequest: null } } : {});
    made.on('error', () => undefined); // the failover is expected: connection errors are part of the run
    clients.push(made);
    return made;
  };
  const sideEffects = new Map<string, number>();
  const completedOnce = new Set<string>();
  const notStored = new Set<string>();
  const runs = new Map<string, number>();
  const kinds = new Map<string, Kind>();
  const completions = new Map<string, number>();
  const acknowledged: string[] = [];
  const degradedWorkers = new Set<number>();
  let grantedWhileDegraded = 0;
  let deniedWhileDegraded = 0;
  let bookkeepingRetries = 0;
  const downFor: number[] = [];
  const outcomeClient = client(false);
  const outcomeStore = new RedisIdempotencyStore(outcomeClient, { prefix: PREFIX });
  const queue = new Queue(QUEUE, { connection: client(true), prefix: bullPrefix });
  const config: FailoverWorkerConfig = {
    startupNodes: cluster.startupNodes,
    prefix: PREFIX,
    bullPrefix,
    queue: QUEUE,
    dependency,
    durableWrites: options.durableWrites ?? true,
  };
  const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const fleet = Array.from({ length: workerCount }, (_, w) => {
    const worker = new IpcProcess(new URL('./failover-worker.ts', import.meta.url), [JSON.stringify(config)]);
    worker.on('run', (m) => {
      count(runs, m.jobId as string);
      kinds.set(m.jobId as string, m.kind as Kind);
    });
    worker.on('side-effect', (m) => count(sideEffects, m.key as string));
    worker.on('once-done', (m) => completedOnce.add(m.key as string));
    worker.on('outcome-not-stored', (m) => notStored.add(m.key as string));
    worker.on('completed', (m) => count(completions, m.jobId as string));
    worker.on('granted-degraded', () => grantedWhileDegraded++);
    worker.on('denied-degraded', () => deniedWhileDegraded++);
    worker.on('degraded', () => degradedWorkers.add(w));
    worker.on('recovered', (m) => downFor.push(m.downForMs as number));
    worker.on('bookkeeping-error', () => bookkeepingRetries++);
    return worker;
  });
  const degraded = async () =>
    (await Promise.all(fleet.map((w) => w.request({ type: 'status' }, 'status', 10_000)))).some(
      (status) => status.degraded === true,
    );
  try {
    await Promise.all(fleet.map((worker) => worker.next('up', 60_000)));
    const deadLetters = new RedisDeadLetterStore({ redis: client(false), prefix: PREFIX });

    // A steady stream: a batch every 20 ms, so jobs are being added, run, retried and filed at the kill.
    const batch = 20;
    let added = 0;
    const producing = (async () => {
      while (added < jobs) {
        const n = Math.min(batch, jobs - added);
        const made = await queue
          .addBulk(
            Array.from({ length: n }, (_, i) => ({ name: KINDS[(added + i) % KINDS.length]!, data: {} })),
          )
          .catch(() => []); // an add refused mid-failover was never acknowledged: the producer moves on
        for (const job of made) acknowledged.push(job.id!);
        added += n;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const ended = async () => (await queue.getCompletedCount()) + (await queue.getFailedCount());
    await waitFor(async () => (await ended()) >= jobs / 4, 30_000, 'a quarter of the jobs to end');

    const killedAt = Date.now();
    await victim.stop();
    await waitFor(() => cluster.healthy(), 30_000, 'the replica to be promoted');
    const promotionMs = Date.now() - killedAt;
    await victim.restart();
    await waitFor(() => cluster.healthy(), 30_000, 'the killed node to rejoin as a replica');
    const replicaBackMs = Date.now() - killedAt;

    await producing;
    let addsLost = 0;
    for (const id of acknowledged) if (!(await queue.getJob(id))) addsLost++;
    const expected = acknowledged.length - addsLost;
    // Jobs whose filing was refused mid-failover come back after the runtime's bookkeeping delay.
    await waitFor(async () => (await ended()) >= expected, 60_000, 'every job to end');
    await waitFor(async () => !(await degraded()), 10_000, 'every budget to recover');
    const recovered = !(await degraded());

    const records = new Map<string, number>();
    const reasons: Record<string, number> = {};
    const unexpected: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await deadLetters.list(QUEUE, { limit: 500, ...(cursor ? { cursor } : {}) });
      for (const record of page.records) {
        records.set(record.jobId, (records.get(record.jobId) ?? 0) + 1);
        reasons[record.reason] = (reasons[record.reason] ?? 0) + 1;
        if (record.name !== 'permanent')
          unexpected.push(`${record.name}: ${record.reason}: ${record.lastError.message}`);
      }
      cursor = page.next;
    } while (cursor);
    const failed = await queue.getJobs(['failed'], 0, -1);
    const completed = await queue.getCompletedCount();
    let outcomesLost = 0;
    let notAcknowledgedMissing = 0;
    for (const key of completedOnce) {
      if ((await outcomeClient.exists(outcomeStore.keyOf(key))) === 1) continue;
      if (notStored.has(key)) notAcknowledgedMissing++;
      else outcomesLost++;
    }
    return {
      jobs,
      added: acknowledged.length,
      workers: workerCount,
      promotionMs,
      replicaBackMs,
      completed,
      deadLettersExpected: failed.length,
      deadLettersLost: failed.filter((job) => !records.has(job.id!)).length,
      deadLettersDoubled: [...records.values()].filter((n) => n > 1).length,
      onceJobs: completedOnce.size,
      outcomesLost,
      outcomesNotAcknowledged: notStored.size,
      outcomesNotAcknowledgedMissing: notAcknowledgedMissing,
      sideEffectsRepeated: [...sideEffects.values()].filter((n) => n > 1).length,
      degradedMs: Math.max(0, ...downFor),
      workersDegraded: degradedWorkers.size,
      grantedWhileDegraded,
      deniedWhileDegraded,
      recovered,
      bookkeepingRetries,
      deadLetterReasons: reasons,
      unexpectedDeadLetters: unexpected,
      bullmq: { addsLost, completionsLost: [...completions.values()].filter((n) => n > 1).length },
      jobsAffected:
        [...runs].filter(([id, n]) => n > RUNS_NEEDED[kinds.get(id) ?? 'ok']).length + unexpected.length,
      totalMs: Date.now() - started,
    };
  } finally {
    await Promise.all(fleet.map((worker) => worker.close()));
    await queue.close();
    for (const made of clients) made.disconnect();
  }
}
