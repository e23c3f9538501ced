/**
 * Flow control on RabbitMQ: two consumers (each with its own breaker, budget and flow controller, as two
 * processes would have, on one shared Redis) of a queue whose dependency goes down for 6 s. With
 * `queueDependency` the consumers stop consuming (`basic.cancel`: the broker sees no consumer) while the
 * breaker is open, only the half-open probes reach the dependency, and every message completes after the
 * recovery with no replay and no dead letter. In a mixed queue (no `queueDependency`) the messages of the
 * down dependency are parked while the others keep flowing.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type AmqpConsumer, createConsumer } from '../../src/amqp/index.js';
import { CircuitBreaker, definePolicy, RetryBudget, TransientError } from '../../src/index.js';
import {
  RedisBreakerStore,
  RedisBudgetStore,
  RedisDeadLetterStore,
  RedisFlowStore,
} from '../../src/redis/index.js';
import { connectRabbit, ensureRabbitVhost, uniqueQueue } from '../helpers/rabbitmq.js';
import { rabbitmqctl } from '../helpers/rabbitmq-admin.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

const DOWN_MS = 6_000;
const COOL_DOWN_MS = 2_000;
const HALF_OPEN_PROBES = 1;
/** Calls that may fail before the breaker opens: 3 in a row, plus what the two consumers (5 each) hold. */
const BEFORE_OPEN = 3 + 2 * 5;

/** `search` answers 503 while down and counts when each call came; `mail` is always up. */
class Dependencies {
  down = false;
  /** When each search call arrived while search was down (ms). */
  readonly searchWhileDown: number[] = [];
  readonly searched = new Map<string, number>();
  readonly mailed = new Map<string, number>();
  readonly mailAt: number[] = [];
  readonly server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const key = url.searchParams.get('key') ?? '';
    if (url.pathname === '/mail') {
      this.mailed.set(key, (this.mailed.get(key) ?? 0) + 1);
      this.mailAt.push(Date.now());
      response.end('ok');
      return;
    }
    if (this.down) {
      this.searchWhileDown.push(Date.now());
      response.statusCode = 503;
      response.end('down');
      return;
    }
    this.searched.set(key, (this.searched.get(key) ?? 0) + 1);
    response.end('ok');
  });

  async listen(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

let url: string;
let admin: ChannelModel;
let channel: ConfirmChannel;
let redisServer: TestRedis;
let redis: Redis;

beforeAll(async () => {
  [url, redisServer] = await Promise.all([ensureRabbitVhost(), TestRedis.start()]);
  admin = await connectRabbit();
  channel = await admin.createConfirmChannel();
  redis = new Redis(redisServer.connection);
}, 60_000);

afterAll(async () => {
  await admin?.close();
  await redis?.quit();
  await redisServer?.close();
});

const policy = definePolicy({
  name: 'flow-amqp',
  maxAttempts: 10,
  backoff: { type: 'fixed', delayMs: 200 },
  jitter: 'none',
  maxAgeMs: '5m',
});

interface Fleet {
  consumers: AmqpConsumer<{ key: string; kind?: string }>[];
  deadLettered: string[];
  deadLetters: RedisDeadLetterStore;
  breakers: RedisBreakerStore;
  close(): Promise<void>;
}

/** Two consumers of `queue`, each with its own breaker, budget and flow controller on the shared Redis. */
function fleet(queue: string, base: string, queueDependency: string | undefined): Fleet {
  const prefix = uniqueQueue('flow');
  const deadLetters = new RedisDeadLetterStore({ redis, prefix });
  const breakers = new RedisBreakerStore({ redis, prefix });
  const deadLettered: string[] = [];
  const consumers = [0, 1].map(() => {
    const budget = new RetryBudget({
      store: new RedisBudgetStore({ redis, prefix }),
      // Two retries per 2 s window before any success: fewer than the failures before the breaker opens,
      // so the budget refuses some; under flow control a refused message is held a window, never ended.
      minAllowance: 2,
      windowMs: 2_000,
      log: false,
    });
    const consumer = createConsumer<{ key: string; kind?: string }>(
      queue,
      async (job, ctx) => {
        const { key, kind } = job.json();
        const dependency = kind === 'mail' ? 'mail' : 'search';
        await ctx.call(dependency, async () => {
          const response = await fetch(`${base}/${dependency}?key=${key}`);
          await response.arrayBuffer();
          if (response.status >= 500) throw new TransientError(`${dependency} answered ${response.status}`);
        });
      },
      {
        connection: url,
        policy,
        deadLetters,
        budget,
        breaker: new CircuitBreaker({
          store: breakers,
          consecutiveFailures: 3,
          coolDownMs: COOL_DOWN_MS,
          halfOpenProbes: HALF_OPEN_PROBES,
          successesToClose: 1,
        }),
        dependencies: { index: 'search', mail: 'mail' },
        concurrency: 5,
        flowControl: {
          store: new RedisFlowStore({ redis, prefix }),
          ...(queueDependency ? { queueDependency } : {}),
          slowStartMs: 1_000,
          floorPerSecond: 20,
          // Parked messages wait in a bucket; they come back on their own after this long.
          parkHorizonMs: 2_000,
        },
      },
    );
    consumer.events.on('dead-letter', (e) => deadLettered.push(e.reason));
    consumer.events.on('error', () => {});
    return consumer;
  });
  return {
    consumers,
    deadLettered,
    deadLetters,
    breakers,
    close: async () => {
      await Promise.all(consumers.map((c) => c.close()));
    },
  };
}

async function publish(queue: string, bodies: { key: string; kind?: string }[]): Promise<void> {
  for (const body of bodies)
    channel.sendToQueue(queue, Buffer.from(JSON.stringify(body)), {
      persistent: true,
      type: body.kind === 'mail' ? 'mail' : 'index',
    });
  await channel.waitForConfirms();
}

/** The consumers the broker lists on `queue` (rabbitmqctl, about a second a call). */
async function consumersOf(queue: string): Promise<number> {
  const listed = await rabbitmqctl([
    'list_consumers',
    '-p',
    inject('stormguardRabbitVhost'),
    'queue_name',
    '--quiet',
    '--no-table-headers',
  ]);
  return listed.split('\n').filter((line) => line.trim() === queue).length;
}

/** The most calls that fall in any span shorter than one cool-down. */
function mostPerCoolDown(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while ((sorted[i] as number) - (sorted[j] as number) >= COOL_DOWN_MS - 100) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('flow control on RabbitMQ', () => {
  it('stops consuming while the breaker is open, lets only the probes through, and completes every message after the recovery', {
    timeout: 90_000,
  }, async () => {
    const queue = uniqueQueue('flow-index');
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    const dependencies = new Dependencies();
    const base = await dependencies.listen();
    const fleetOf = fleet(queue, base, 'search');
    const total = 100;
    try {
      await Promise.all(fleetOf.consumers.map((c) => c.ready));
      dependencies.down = true;
      const downAt = Date.now();
      await publish(
        queue,
        Array.from({ length: total }, (_, i) => ({ key: `k${i}` })),
      );
      await waitFor(
        async () =>
          (await fleetOf.breakers.list()).some((b) => b.dependency === 'search' && b.state !== 'closed'),
        DOWN_MS,
        "search's breaker to open",
      );
      const openedAt = Date.now();
      // Calls admitted before the open may still arrive a little after it (a loaded event loop, a
      // breaker state cached for up to 250 ms): probes come a cool-down after the open, so everything in
      // its first half is counted with the calls before it.
      const probesFrom = openedAt + COOL_DOWN_MS / 2;
      // basic.cancel: the broker lists no consumer of the queue while the breaker holds it (asked with
      // rabbitmqctl: a quorum queue's passive declare reports a consumer count that lags behind).
      await waitFor(
        async () => (await consumersOf(queue)) === 0,
        DOWN_MS,
        'the consumers to cancel their subscriptions',
        0,
      );
      const cancelledAt = Date.now();
      // The outage lasts DOWN_MS: this shapes the scenario, it synchronises nothing.
      await sleep(Math.max(0, downAt + DOWN_MS - Date.now()));
      dependencies.down = false;
      const beforeOpen = dependencies.searchWhileDown.filter((t) => t < probesFrom).length;
      const afterOpen = dependencies.searchWhileDown.filter((t) => t >= probesFrom);
      await waitFor(
        () => dependencies.searched.size === total,
        60_000,
        `the ${total} messages to complete`,
        50,
      ).catch(async (error: unknown) => {
        const q = await channel.checkQueue(queue);
        throw new Error(
          `${(error as Error).message}: ${dependencies.searched.size} completed, ${q.messageCount} ready, consumers ${await consumersOf(queue)}, dead-lettered ${fleetOf.deadLettered.join(',')}, in flight ${fleetOf.consumers.map((c) => c.inFlight).join('/')}`,
        );
      });
      process.stdout.write(
        `amqp flow control: ${JSON.stringify({ cancelledAfterOpenMs: cancelledAt - openedAt, beforeOpen, probeTimes: afterOpen.map((t) => t - openedAt), probes: afterOpen.length, mostPerCoolDown: mostPerCoolDown(afterOpen), deadLettered: fleetOf.deadLettered, ms: Date.now() - downAt })}\n`,
      );
      // Around the open: its 3 failures in a row and the calls already under way.
      expect(beforeOpen).toBeLessThanOrEqual(BEFORE_OPEN);
      // At most halfOpenProbes calls per cool-down reach search once its breaker is open.
      expect(mostPerCoolDown(afterOpen)).toBeLessThanOrEqual(HALF_OPEN_PROBES);
      expect(afterOpen.length).toBeLessThanOrEqual(
        HALF_OPEN_PROBES * (Math.ceil(DOWN_MS / COOL_DOWN_MS) + 1),
      );
      expect(fleetOf.deadLettered).toEqual([]);
      expect(await fleetOf.deadLetters.count(queue, { reason: 'budget-exhausted' })).toBe(0);
      expect(await fleetOf.deadLetters.count(queue, { reason: 'breaker-open' })).toBe(0);
      expect(await fleetOf.deadLetters.count(queue)).toBe(0);
      expect([...dependencies.searched.values()].every((n) => n === 1)).toBe(true);
      // Consuming again on its own after the recovery.
      expect(await consumersOf(queue)).toBe(2);
    } finally {
      await fleetOf.close();
      await dependencies.close();
    }
  });

  it('parks the messages of the down dependency in a mixed queue while the others keep flowing', {
    timeout: 90_000,
  }, async () => {
    const queue = uniqueQueue('flow-mixed');
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    const dependencies = new Dependencies();
    const base = await dependencies.listen();
    const fleetOf = fleet(queue, base, undefined);
    const indexed = 60;
    let mailed = 0;
    let producing: Promise<void> | undefined;
    try {
      await Promise.all(fleetOf.consumers.map((c) => c.ready));
      dependencies.down = true;
      const downAt = Date.now();
      await publish(
        queue,
        Array.from({ length: indexed }, (_, i) => ({ key: `k${i}` })),
      );
      // Mail keeps coming during the outage, 10 a second.
      producing = (async () => {
        while (Date.now() < downAt + DOWN_MS) {
          await publish(queue, [{ key: `mail${mailed++}`, kind: 'mail' }]);
          await sleep(100);
        }
      })();
      await producing;
      dependencies.down = false;
      const upAt = Date.now();
      await waitFor(
        () => dependencies.searched.size === indexed && dependencies.mailed.size === mailed,
        60_000,
        'every message to complete',
        50,
      ).catch((error: unknown) => {
        throw new Error(
          `${(error as Error).message}: ${dependencies.searched.size} of ${indexed} indexed, ${dependencies.mailed.size} of ${mailed} mailed, dead-lettered ${fleetOf.deadLettered.join(',')}`,
        );
      });
      const mailPerSecond: number[] = [];
      for (let from = downAt + 1_000; from + 1_000 <= upAt; from += 1_000)
        mailPerSecond.push(dependencies.mailAt.filter((t) => t >= from && t < from + 1_000).length);
      process.stdout.write(
        `amqp flow control (mixed): ${JSON.stringify({ callsWhileDown: dependencies.searchWhileDown.length, mailPerSecond, deadLettered: fleetOf.deadLettered })}\n`,
      );
      // Mail flowed through every second of the outage; search saw its probes only, after the first failures.
      expect(mailPerSecond.every((n) => n >= 5)).toBe(true);
      expect(dependencies.searchWhileDown.length).toBeLessThanOrEqual(
        BEFORE_OPEN + HALF_OPEN_PROBES * (Math.ceil(DOWN_MS / COOL_DOWN_MS) + 1),
      );
      expect(fleetOf.deadLettered).toEqual([]);
      expect(await fleetOf.deadLetters.count(queue)).toBe(0);
      expect([...dependencies.searched.values()].every((n) => n === 1)).toBe(true);
      expect([...dependencies.mailed.values()].every((n) => n === 1)).toBe(true);
    } finally {
      await producing?.catch(() => {});
      await fleetOf.close();
      await dependencies.close();
    }
  });
});
