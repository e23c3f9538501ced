/**
 * The RabbitMQ game day, free of vitest so the test (300 messages) and `bench/amqp/gameday.ts` (3 000) run
 * the same scenario. Three consumer processes, a paced producer, and on a fixed timeline (the timeline
 * shapes the load; every wait for an outcome is a condition with a bound):
 *
 * - 2 s: `search` goes down (503) for `outageMs` (8 s);
 * - 4 s: the budget's Redis is killed (SIGKILL, nothing persisted), and started again 3 s later, empty;
 * - 5 s: the next ledger call of consumer 1 is held, and the process is SIGKILLed in the middle of it;
 * - then every message ends completed or dead-lettered, the dead letters are replayed through the
 *   backend-neutral replay engine onto the queue (`amqpReplayQueue`), and consumed.
 *
 * It runs in a vhost of its own (created and deleted here), so that at the end the work queue and every
 * delay bucket can be checked empty: nothing is still travelling that could run again later.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { BUCKET_COUNT, bucketQueue, declareDelayBuckets } from '../../../src/amqp/delay-buckets.js';
import { amqpReplayQueue } from '../../../src/amqp/replay-queue.js';
import { RedisDeadLetterStore } from '../../../src/redis/dead-letter-store.js';
import { replayDeadLetters } from '../../../src/runtime/replay/replay.js';
import { IpcProcess } from '../../helpers/ipc-process.js';
import { rabbitmqctl, TEST_VHOST_PREFIX } from '../../helpers/rabbitmq-admin.js';
import { TestRedis, waitFor } from '../../helpers/redis-server.js';
import { type DependencyCounts, GameDayDependency } from './dependency.js';
import { GAMEDAY_BREAKER, GAMEDAY_BUDGET, type GameDayConsumerSettings } from './settings.js';

/** What a game day is asked to do. */
export interface GameDayOptions {
  messages: number;
  /** Messages each consumer runs at once (its prefetch). Default 10. */
  concurrency?: number;
  /** The producer spreads the messages over this long. Default 12 000. */
  publishMs?: number;
  /** How long search is down. Default 8 000. */
  outageMs?: number;
  /** How long the budget's Redis stays down. Default 3 000. */
  redisDownMs?: number;
  /** Bound on each wait for an outcome. Default 30 000. */
  waitMs?: number;
  /** Consumers report their internal errors on stderr. */
  verbose?: boolean;
}

/** What happened, as plain JSON: the test asserts on it, the benchmark prints it. */
export interface GameDayReport {
  messages: number;
  processes: number;
  /** From the start to every consumer consuming (a vhost, two Redis servers, three processes), ms. */
  setupMs: number;
  /** Wall time from the first message published to the last replayed one done, ms. */
  wallMs: number;
  outageMs: number;
  /** Dead letters before the replay, by reason. */
  deadLettersByReason: Record<string, number>;
  /** Keys both completed and dead-lettered before the replay (must be none). */
  completedAndDeadLettered: number;
  /** Messages the replay put back. */
  replayed: number;
  replayFailed: number;
  /** Dead letters left after the replay was consumed. */
  deadLettersLeft: number;
  /** From the end of the outage to every message completed or dead-lettered, ms. */
  settledAfterRecoveryMs: number;
  /** From the start of the replay to every replayed message done, ms. */
  replayDrainMs: number;
  /** Keys whose side effect is missing, or recorded twice or more. */
  lost: string[];
  duplicated: string[];
  /** Search successes per key above one. */
  searchedTwice: string[];
  /** The key the killed process was holding, and its side effects at the end. */
  killedMidMessage: { key: string; ledger: number };
  retriesWhileDown: number;
  callsWhileDown: number;
  successesBeforeDown: number;
  /** The budget's bound on the retries that may reach search while it is down (see `retryBound`). */
  retryBound: number;
  /** Consumers whose budget reported itself degraded while its Redis was down. */
  degradedProcesses: number;
  /** Messages left in the work queue and the delay buckets once the fleet stopped. */
  leftInQueue: number;
  leftInBuckets: number;
  budget: typeof GAMEDAY_BUDGET;
  breaker: typeof GAMEDAY_BREAKER;
}

const PROCESSES = 3;
const DOWN_AT_MS = 2_000;
const REDIS_KILL_AT_MS = 4_000;
const CONSUMER_KILL_AT_MS = 5_000;

/**
 * The most retries design §3 lets reach `search` while it is down, from the budget's settings and the
 * successes the dependency itself counted:
 *
 * - the store's first life: `max(floor, floor(ratio × successes before the outage))` (+1, the slack §3
 *   allows), since no success came during the outage and the run is shorter than one window;
 * - while its Redis is down: each process's local fallback, the floor alone (`processes × floor`);
 * - its second life: Redis restarted empty, so a fresh window: the floor (+1), as no success comes before
 *   search is back.
 */
export function retryBound(successesBeforeDown: number, processes: number): number {
  const { ratio, minAllowance } = GAMEDAY_BUDGET;
  const firstLife = Math.max(minAllowance, Math.floor(ratio * successesBeforeDown)) + 1;
  const degraded = processes * minAllowance;
  const secondLife = minAllowance + 1;
  return firstLife + degraded + secondLife;
}

/** Runs the game day once. */
export async function runGameDay(options: GameDayOptions): Promise<GameDayReport> {
  const total = options.messages;
  const concurrency = options.concurrency ?? 10;
  const publishMs = options.publishMs ?? 12_000;
  const outageMs = options.outageMs ?? 8_000;
  const redisDownMs = options.redisDownMs ?? 3_000;
  const waitMs = options.waitMs ?? 30_000;
  const prefix = `gameday-${process.pid}-${Date.now()}`;
  const vhost = `${TEST_VHOST_PREFIX}${process.pid}-${Date.now()}-gameday`;
  const queue = 'gameday';

  const setupStartedAt = Date.now();
  // The processes load while the vhost, the buckets and the Redis servers are made (loading takes seconds).
  const script = new URL('./consumer-process.ts', import.meta.url);
  const fleet = Array.from({ length: PROCESSES }, () => new IpcProcess(script, []));
  const loaded = Promise.all(fleet.map((p) => p.next('up', 60_000)));
  loaded.catch(() => {});
  const cleanups: (() => Promise<unknown>)[] = [];
  const cleanup = async () => {
    await Promise.all(fleet.map((p) => p.kill()));
    for (const step of cleanups.reverse()) await step().catch(() => {});
  };
  try {
    await rabbitmqctl(['add_vhost', vhost]);
    cleanups.push(() => rabbitmqctl(['delete_vhost', vhost]));
    await rabbitmqctl(['set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']);
    const amqpUrl = `amqp://guest:guest@127.0.0.1:5672/${encodeURIComponent(vhost)}`;
    const [budgetRedis, storesRedis] = await Promise.all([TestRedis.start(), TestRedis.start()]);
    cleanups.push(
      () => budgetRedis.close(),
      () => storesRedis.close(),
    );
    const dependency = new GameDayDependency();
    const dependencyUrl = await dependency.listen();
    cleanups.push(() => dependency.close());
    const redis = new Redis(storesRedis.connection);
    cleanups.push(() => redis.quit());
    const deadLetters = new RedisDeadLetterStore({ redis, prefix });
    const connection = await amqp.connect(amqpUrl);
    cleanups.push(() => connection.close());
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    // Declared once here: three consumers declaring 27 new quorum queues at once take far longer.
    await declareDelayBuckets(channel);
    const declaredAt = Date.now();
    await loaded;

    const settings: GameDayConsumerSettings = {
      amqpUrl,
      queue,
      prefix,
      budgetRedisPort: budgetRedis.port,
      storesRedisPort: storesRedis.port,
      dependencyUrl,
      concurrency,
      inFlightTtlMs: 2_000,
      budget: GAMEDAY_BUDGET,
      breaker: GAMEDAY_BREAKER,
      ...(options.verbose ? { verbose: true } : {}),
    };
    // The process that is killed takes one message at a time, so the kill's point in its work is known:
    // in the middle of a side effect the ledger has not committed. A process killed after a side effect
    // and before the guard stored its outcome would repeat that side effect on redelivery: the one gap an
    // idempotency guard cannot close (at-least-once), which a concurrency of 10 leaves open for the other
    // messages in its hands.
    await Promise.all(
      fleet.map((p, i) =>
        p.request(
          { type: 'start', settings: i === 0 ? { ...settings, concurrency: 1 } : settings },
          'ready',
          60_000,
        ),
      ),
    );
    const setupMs = Date.now() - setupStartedAt;
    if (options.verbose)
      process.stderr.write(
        `setup: ${declaredAt - setupStartedAt} ms to a vhost with its buckets, ${setupMs} ms in all\n`,
      );
    const [victim, ...survivors] = fleet as [IpcProcess, ...IpcProcess[]];

    // The producer, paced; the timeline runs beside it.
    const startedAt = Date.now();
    const at = (ms: number) => sleep(Math.max(0, startedAt + ms - Date.now()));
    const producing = (async () => {
      for (let sent = 0; sent < total; ) {
        const due = Math.min(total, Math.ceil(((Date.now() - startedAt) / publishMs) * total) || 1);
        for (; sent < due; sent++)
          channel.sendToQueue(queue, Buffer.from(JSON.stringify({ key: `m${sent}` })), {
            persistent: true,
            type: 'index',
            contentType: 'application/json',
          });
        await channel.waitForConfirms();
        await sleep(20);
      }
    })();
    const outage = (async () => {
      await at(DOWN_AT_MS);
      dependency.setDown(true);
      await at(DOWN_AT_MS + outageMs);
      dependency.setDown(false);
    })();
    const redisKill = (async () => {
      await at(REDIS_KILL_AT_MS);
      await budgetRedis.stop();
      await at(REDIS_KILL_AT_MS + redisDownMs);
      await budgetRedis.restart();
    })();
    const consumerKill = (async () => {
      await at(CONSUMER_KILL_AT_MS);
      const pid = victim.pid;
      if (pid === undefined) throw new Error('the victim process has no pid');
      const key = await dependency.holdNextFrom(pid);
      await victim.kill();
      return key;
    })();
    const [, , , killedKey] = await Promise.all([producing, outage, redisKill, consumerKill]);
    const recoveredAt = Date.now();

    const deadLetteredKeys = async (): Promise<string[]> => {
      const keys: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await deadLetters.list(queue, { limit: 500, ...(cursor ? { cursor } : {}) });
        for (const record of page.records) {
          const data = record.data as { body?: string } | undefined;
          keys.push((JSON.parse(Buffer.from(data?.body ?? '', 'base64').toString()) as { key: string }).key);
        }
        cursor = page.next;
      } while (cursor);
      return keys;
    };
    await waitFor(
      async () => dependency.searched() + (await deadLetters.count(queue)) >= total,
      waitMs,
      'every message to be completed or dead-lettered',
      100,
    );
    const settledAfterRecoveryMs = Date.now() - recoveredAt;
    const dead = await deadLetteredKeys();
    const searchedNow = dependency.counts().searchSuccesses;
    const completedAndDeadLettered = dead.filter((key) => searchedNow[key] !== undefined).length;
    const deadLettersByReason: Record<string, number> = {};
    for (const reason of [
      'permanent',
      'max-attempts',
      'max-age',
      'budget-exhausted',
      'breaker-open',
    ] as const) {
      const n = await deadLetters.count(queue, { reason });
      if (n > 0) deadLettersByReason[reason] = n;
    }

    const replayStartedAt = Date.now();
    const report = await replayDeadLetters({
      store: deadLetters,
      queue,
      jobs: amqpReplayQueue(channel, queue),
    });
    await waitFor(
      async () => dependency.searched() === total && (await deadLetters.count(queue)) === 0,
      waitMs,
      'every replayed message to complete',
      100,
    );
    const replayDrainMs = Date.now() - replayStartedAt;
    const wallMs = Date.now() - startedAt;

    // Stop the fleet gracefully: what is in hand finishes and is acked; then nothing may be left anywhere.
    const closed = await Promise.all(survivors.map((p) => p.request({ type: 'exit' }, 'closed', 30_000)));
    const degradedProcesses = closed.filter((c) => (c.degraded as number) > 0).length;
    const leftInQueue = (await channel.checkQueue(queue)).messageCount;
    let leftInBuckets = 0;
    for (let index = 0; index < BUCKET_COUNT; index++)
      leftInBuckets += (await channel.checkQueue(bucketQueue(index))).messageCount;

    const counts: DependencyCounts = dependency.counts();
    const keys = Array.from({ length: total }, (_, i) => `m${i}`);
    return {
      messages: total,
      processes: PROCESSES,
      setupMs,
      wallMs,
      outageMs,
      deadLettersByReason,
      completedAndDeadLettered,
      replayed: report.moved.length,
      replayFailed: report.failed.length,
      deadLettersLeft: await deadLetters.count(queue),
      settledAfterRecoveryMs,
      replayDrainMs,
      lost: keys.filter(
        (key) => counts.ledger[key] === undefined || counts.searchSuccesses[key] === undefined,
      ),
      duplicated: keys.filter((key) => (counts.ledger[key] ?? 0) > 1),
      searchedTwice: keys.filter((key) => (counts.searchSuccesses[key] ?? 0) > 1),
      killedMidMessage: { key: killedKey, ledger: counts.ledger[killedKey] ?? 0 },
      retriesWhileDown: counts.retriesWhileDown,
      callsWhileDown: counts.callsWhileDown,
      successesBeforeDown: counts.successesBeforeDown,
      retryBound: retryBound(counts.successesBeforeDown, PROCESSES),
      degradedProcesses,
      leftInQueue,
      leftInBuckets,
      budget: GAMEDAY_BUDGET,
      breaker: GAMEDAY_BREAKER,
    };
  } finally {
    await cleanup();
  }
}
