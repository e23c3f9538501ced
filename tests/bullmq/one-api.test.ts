/**
 * One API, tried as a user would: the reader (`deadLetterQueue`) finds what the writer (`createWorker`)
 * filed with no store named, an option in the wrong place or misspelt is refused with where it belongs,
 * and the Redis stores take connection options as well as a client.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { createDashboard } from '../../src/dashboard/handler.js';
import { isInvalidInputError } from '../../src/errors/invalid-input-error.js';
import { PermanentError } from '../../src/errors/permanent-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { PostgresAuditLog } from '../../src/postgres/audit-log.js';
import { PostgresBreakerStore } from '../../src/postgres/breaker-store.js';
import { PostgresBudgetStore } from '../../src/postgres/budget-store.js';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { PostgresFlowStore } from '../../src/postgres/flow-store.js';
import { PostgresIdempotencyStore } from '../../src/postgres/idempotency-store.js';
import { PostgresReplayRunStore } from '../../src/postgres/replay-run-store.js';
import { RedisAuditLog } from '../../src/redis/audit-log.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { RedisReplayRunStore } from '../../src/redis/replay-run-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

let server: TestRedis;
let redis: Redis;
let n = 0;
const fresh = (what: string) => `${what}-${++n}`;

beforeAll(async () => {
  server = await TestRedis.start();
  redis = new Redis(server.connection);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.close();
});

const connection = () => ({ ...server.connection, maxRetriesPerRequest: null });
const fast = definePolicy({ name: 'fast', maxAttempts: 1, jitter: 'none' });

async function connectedClients(): Promise<number> {
  return Number(/connected_clients:(\d+)/.exec(await redis.info('clients'))?.[1]);
}

/** The error `make` throws (it must throw). */
function thrown(make: () => unknown): Error {
  try {
    make();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

describe('deadLetterQueue with no store', () => {
  it('reads the store createWorker files to by default on the same connection, and closes the client it opened', async () => {
    const queueName = fresh('default-reader');
    const worker = createWorker(
      queueName,
      async () => {
        throw new PermanentError('no such document');
      },
      { connection: connection(), policy: fast },
    );
    const dlq = deadLetterQueue(queueName, { connection: connection() });
    try {
      const { Queue } = await import('bullmq');
      const queue = new Queue(queueName, { connection: connection() });
      const job = await queue.add('index', { docId: 7 });
      await queue.close();
      await waitFor(async () => (await dlq.count()) === 1, 5_000, 'the dead letter, seen by the reader');
      expect((await dlq.list()).records).toMatchObject([
        { jobId: job.id, reason: 'permanent', data: { docId: 7 } },
      ]);
    } finally {
      await worker.close();
    }
    const before = await connectedClients();
    await dlq.close();
    expect(await connectedClients()).toBe(before - 1);
  });

  it('says what to give when there is no Redis connection to default to', () => {
    const error = thrown(() => deadLetterQueue('index', {}));
    expect(isInvalidInputError(error)).toBe(true);
    expect(error.message).toMatch(/give options\.connection .* or options\.store/);
    expect(
      thrown(() => deadLetterQueue('index', { connection: 'postgres://x', backend: () => undefined }))
        .message,
    ).toMatch(/with a backend, give options\.store/);
  });
});

describe('an option in the wrong place or misspelt', () => {
  const make = (options: Record<string, unknown>) => () =>
    createWorker('q', async () => {}, { connection: connection(), policy: fast, ...options } as never);

  it('createWorker: a BullMQ option beside its own names workerOptions, with the value', () => {
    const error = thrown(make({ prefix: '{bull}' }));
    expect(isInvalidInputError(error)).toBe(true);
    expect(error.message).toBe(
      'createWorker: unknown option "prefix": it is a BullMQ worker option: give it in workerOptions, e.g. { workerOptions: { prefix: "{bull}" } }',
    );
    expect(thrown(make({ lockDuration: 30_000 })).message).toMatch(
      /workerOptions: \{ lockDuration: 30000 \}/,
    );
  });

  it('createWorker: a typo gets the option it is closest to, a stranger the list of options', () => {
    expect(thrown(make({ deadLeters: false })).message).toMatch(
      /^createWorker: unknown option "deadLeters": did you mean "deadLetters"\?/,
    );
    expect(
      thrown(() => createWorker('q', async () => {}, { conection: {}, policy: fast } as never)).message,
    ).toMatch(/unknown option "conection": did you mean "connection"/);
    expect(thrown(make({ colour: 'blue' })).message).toMatch(
      /unknown option "colour": createWorker takes connection, backend, policy, deadLetters/,
    );
    expect(thrown(make({ store: {} })).message).toMatch(/the dead-letter store is `deadLetters`/);
  });

  it('createDashboard: names the option and where it belongs', () => {
    const fleet = {} as never;
    expect(thrown(() => createDashboard({ fleet, allowedHost: ['ops.example.com'] } as never)).message).toBe(
      'createDashboard: unknown option "allowedHost": the names the console answers for are `allowedHosts` (a list)',
    );
    expect(thrown(() => createDashboard({ fleet, basepath: '/ops' } as never)).message).toMatch(
      /^createDashboard: unknown option "basepath": did you mean "basePath"/,
    );
  });

  it('deadLetterQueue: names the option and where it belongs', () => {
    const store = new RedisDeadLetterStore({ redis });
    expect(thrown(() => deadLetterQueue('index', { deadLetters: store } as never)).message).toMatch(
      /^deadLetterQueue: unknown option "deadLetters": the dead-letter store is `store` here/,
    );
    expect(thrown(() => deadLetterQueue('index', { store, clok: 1 } as never)).message).toMatch(
      /unknown option "clok": did you mean "clock"/,
    );
  });

  it.each([
    [
      'RedisDeadLetterStore',
      (o: object) => new RedisDeadLetterStore(o as never),
      'durableWrite',
      'durableWrites',
    ],
    ['RedisBudgetStore', (o: object) => new RedisBudgetStore(o as never), 'prefx', 'prefix'],
    [
      'RedisBreakerStore',
      (o: object) => new RedisBreakerStore(o as never),
      'whenUnavailble',
      'whenUnavailable',
    ],
    ['RedisFlowStore', (o: object) => new RedisFlowStore(o as never), 'stateTTLMs', 'stateTtlMs'],
    ['RedisAuditLog', (o: object) => new RedisAuditLog(o as never), 'maxEntires', 'maxEntries'],
    ['RedisReplayRunStore', (o: object) => new RedisReplayRunStore(o as never), 'prefixe', 'prefix'],
  ])('%s refuses a misspelt option, naming the right one', (name, make, typo, right) => {
    const error = thrown(() => make({ redis, [typo]: 1 }));
    expect(isInvalidInputError(error)).toBe(true);
    expect(error.message).toMatch(new RegExp(`^${name}: unknown option "${typo}": did you mean "${right}"`));
  });
});

describe('PostgreSQL stores given a misplaced option', () => {
  // Refused before any connection is made: the URL points nowhere.
  const connection = 'postgres://127.0.0.1:1/nowhere';
  it.each([
    ['PostgresDeadLetterStore', (o: object) => new PostgresDeadLetterStore(o as never), 'redis'],
    ['PostgresBudgetStore', (o: object) => new PostgresBudgetStore(o as never), 'schemaName'],
    ['PostgresBreakerStore', (o: object) => new PostgresBreakerStore(o as never), 'whenUnavailble'],
    ['PostgresFlowStore', (o: object) => new PostgresFlowStore(o as never), 'stateTTLMs'],
    ['PostgresAuditLog', (o: object) => new PostgresAuditLog(o as never), 'maxEntires'],
    ['PostgresIdempotencyStore', (o: object) => new PostgresIdempotencyStore(o as never), 'durableWrites'],
    ['PostgresReplayRunStore', (o: object) => new PostgresReplayRunStore(o as never), 'pool'],
  ])('%s refuses %s, naming it', (name, make, option) => {
    const error = thrown(() => make({ connection, [option]: 1 }));
    expect(isInvalidInputError(error)).toBe(true);
    expect(error.message).toMatch(new RegExp(`^${name}: unknown option "${option}"`));
  });
});

describe('Redis stores given connection options', () => {
  it('RedisDeadLetterStore opens its own client from { host, port }, works on it, and close() closes it', async () => {
    const before = await connectedClients();
    const store = new RedisDeadLetterStore({ redis: server.connection, prefix: fresh('own') });
    await store.registerQueue('index');
    expect((await store.queue('index'))?.queue).toBe('index');
    expect(await connectedClients()).toBe(before + 1);
    await store.close();
    await waitFor(async () => (await connectedClients()) === before, 5_000, 'the store to disconnect');
  });

  it.each([
    ['RedisBudgetStore', (redis: unknown) => new RedisBudgetStore({ redis } as never)],
    ['RedisBreakerStore', (redis: unknown) => new RedisBreakerStore({ redis } as never)],
    ['RedisFlowStore', (redis: unknown) => new RedisFlowStore({ redis } as never)],
    ['RedisAuditLog', (redis: unknown) => new RedisAuditLog({ redis } as never)],
    ['RedisReplayRunStore', (redis: unknown) => new RedisReplayRunStore({ redis } as never)],
  ])(
    '%s takes a redis:// URL, and closes the client it opened; a client given stays open',
    async (_, make) => {
      const before = await connectedClients();
      const own = make(server.url) as { close(): Promise<void> };
      await waitFor(async () => (await connectedClients()) === before + 1, 5_000, 'the store to connect');
      await own.close();
      // QUIT is answered before the server drops the connection from its list.
      await waitFor(async () => (await connectedClients()) === before, 5_000, 'the store to disconnect');
      const shared = make(redis) as { close(): Promise<void> };
      await shared.close();
      expect(await redis.ping()).toBe('PONG');
    },
  );

  it('says what redis must be when it is neither a client nor options', () => {
    const error = thrown(() => new RedisDeadLetterStore({ redis: 6379 } as never));
    expect(isInvalidInputError(error)).toBe(true);
    expect(error.message).toBe(
      'RedisDeadLetterStore: redis must be an ioredis client (new Redis(url) or new Cluster(nodes)), ioredis options ({ host, port }) or a redis:// URL; got 6379',
    );
  });
});
