import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/common/clock.js';
import { isClaimLostError } from '../../src/errors/claim-lost-error.js';
import { isInvalidInputError } from '../../src/errors/invalid-input-error.js';
import { isTransientError } from '../../src/errors/transient-error.js';
import { isValidationError } from '../../src/errors/validation-error.js';
import { type IdempotencyGuardOptions, idempotencyGuard } from '../../src/idempotency/guard.js';
import { redisIdempotencyGuard } from '../../src/redis/idempotency-guard.js';
import { RedisIdempotencyStore } from '../../src/redis/idempotency-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

let server: TestRedis;
let redis: Redis;
let keyCounter = 0;
const freshKey = () => `order-${++keyCounter}`;

beforeAll(async () => {
  server = await TestRedis.start();
  redis = new Redis(server.connection);
});
afterAll(async () => {
  redis.disconnect();
  await server.close();
});

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('idempotencyGuard.once', () => {
  it('runs fn once for 20 concurrent callers and gives every caller its outcome', async () => {
    const guard = redisIdempotencyGuard({ redis, ttlMs: 60_000, inFlightTtlMs: 5_000 });
    const key = freshKey();
    const release = deferred();
    let runs = 0;
    const charge = async () => {
      runs += 1;
      await release.promise;
      return { receipt: 'r-1', amount: 4200 };
    };
    const callers = Array.from({ length: 20 }, () => guard.run(key, charge));
    await waitFor(() => runs === 1, 2_000, 'the first caller to start the work');
    release.resolve();
    const results = await Promise.all(callers);
    expect(runs).toBe(1);
    expect(results.filter((r) => r.ran)).toHaveLength(1);
    for (const r of results) expect(r.value).toEqual({ receipt: 'r-1', amount: 4200 });
  });

  it('returns the stored outcome to a retry without running fn again', async () => {
    const guard = redisIdempotencyGuard({ redis, ttlMs: 60_000 });
    const key = freshKey();
    let runs = 0;
    const send = async () => ++runs;
    expect(await guard.once(key, send)).toBe(1);
    expect(await guard.run(key, send)).toEqual({ value: 1, ran: false });
    // Another guard (another worker process) sees the same outcome.
    const otherRedis = redis.duplicate();
    const other = redisIdempotencyGuard({ redis: otherRedis, ttlMs: 60_000 });
    expect(await other.once(key, send)).toBe(1);
    otherRedis.disconnect();
    expect(runs).toBe(1);
  });

  it('keeps outcomes apart by key and by prefix', async () => {
    const a = redisIdempotencyGuard({ redis, ttlMs: 60_000 });
    const b = redisIdempotencyGuard({ redis, prefix: 'tenant-b', ttlMs: 60_000 });
    const key = freshKey();
    expect(await a.once(key, () => 'a')).toBe('a');
    expect(await b.once(key, () => 'b')).toBe('b');
    expect(await a.once(`${key}-other`, () => 'c')).toBe('c');
    expect(await redis.exists(`stormguard:idempotency:${key}`, `tenant-b:idempotency:${key}`)).toBe(2);
  });

  it('keeps prefix shop + key eu:1 apart from prefix shop:eu + key 1, and refuses an empty prefix', async () => {
    const key = freshKey();
    const shop = redisIdempotencyGuard({ redis, prefix: 'shop', ttlMs: 60_000 });
    const shopEu = redisIdempotencyGuard({ redis, prefix: 'shop:eu', ttlMs: 60_000 });
    expect(await shop.once(`eu:${key}`, () => 'shop')).toBe('shop');
    expect(await shopEu.once(key, () => 'shop:eu')).toBe('shop:eu');
    // The pair that shared a key in the first layout, <prefix>:idempotency:<key>.
    expect(await shop.once(`x:idempotency:${key}`, () => 'shop')).toBe('shop');
    const other = redisIdempotencyGuard({ redis, prefix: 'shop:idempotency:x', ttlMs: 60_000 });
    expect(await other.once(key, () => 'other')).toBe('other');
    expect(() => new RedisIdempotencyStore(redis, { prefix: '' })).toThrow(/prefix "": must not be empty/);
  });

  it('stores outcomes as JSON: undefined stays undefined, a Date comes back as its ISO string', async () => {
    const guard = redisIdempotencyGuard({ redis, ttlMs: 60_000 });
    const [k1, k2] = [freshKey(), freshKey()];
    await guard.once(k1, () => undefined);
    expect(await guard.run(k1, () => 'again')).toEqual({ value: undefined, ran: false });
    const at = new Date(5_000);
    await guard.once(k2, () => ({ at }));
    expect(await guard.once(k2, () => ({ at }))).toEqual({ at: at.toISOString() });
  });

  it('does not store a failure, so a retry runs fn again', async () => {
    const guard = redisIdempotencyGuard({ redis, ttlMs: 60_000 });
    const key = freshKey();
    let runs = 0;
    const flaky = async () => {
      runs += 1;
      if (runs === 1) throw new Error('provider said 503');
      return 'sent';
    };
    await expect(guard.once(key, flaky)).rejects.toThrow('provider said 503');
    expect(await guard.once(key, flaky)).toBe('sent');
    expect(runs).toBe(2);
  });

  it('lets a new caller run once the claim of a crashed caller expires', async () => {
    const store = new RedisIdempotencyStore(redis);
    const key = freshKey();
    // A worker claimed the key and died: nobody will finish, release or renew its claim.
    expect(await store.begin(key, 'crashed-worker', 300)).toEqual({ state: 'run' });
    const guard = redisIdempotencyGuard({ redis, ttlMs: 60_000, inFlightTtlMs: 300 });
    let runs = 0;
    const result = await guard.run(key, () => ++runs);
    expect(result).toEqual({ value: 1, ran: true });
    // The crashed worker's late finish cannot overwrite the outcome.
    expect(await store.finish(key, 'crashed-worker', JSON.stringify({ value: 99 }), 60_000)).toBe(false);
    expect(await guard.once(key, () => ++runs)).toBe(1);
  });

  it('renews its claim while long work runs, so nobody starts it a second time', async () => {
    const inFlightTtlMs = 150;
    const guard = redisIdempotencyGuard({ redis, ttlMs: 60_000, inFlightTtlMs, waitTimeoutMs: 10_000 });
    const key = freshKey();
    const redisKey = `stormguard:idempotency:${key}`;
    const finish = deferred();
    let runs = 0;
    const slow = async () => {
      runs += 1;
      await finish.promise;
      return 'done';
    };
    const first = guard.run(key, slow);
    await waitFor(() => runs === 1, 2_000, 'the slow work to start');
    // Watch the claim's time to live go back up: each rise is one renewal. Four renewals outlast the claim.
    let renewals = 0;
    let last = await redis.pttl(redisKey);
    await waitFor(
      async () => {
        const now = await redis.pttl(redisKey);
        if (now > last) renewals += 1;
        last = now;
        return renewals >= 4;
      },
      5_000,
      'the claim to be renewed four times',
      10,
    );
    const second = guard.run(key, slow);
    finish.resolve();
    expect(await first).toEqual({ value: 'done', ran: true });
    expect(await second).toEqual({ value: 'done', ran: false });
    expect(runs).toBe(1);
  });

  it('gives up waiting with a TransientError once waitTimeoutMs has passed on its clock', async () => {
    const store = new RedisIdempotencyStore(redis);
    const key = freshKey();
    await store.begin(key, 'busy-worker', 30_000);
    let waits = 0;
    const begin = store.begin.bind(store);
    store.begin = async (...args) => {
      const claim = await begin(...args);
      if (claim.state === 'wait') waits += 1;
      return claim;
    };
    const clock = new FakeClock(0);
    const guard = idempotencyGuard({
      store,
      clock,
      ttlMs: 60_000,
      inFlightTtlMs: 30_000,
      waitTimeoutMs: 10_000,
      pollMs: 5,
    });
    let runs = 0;
    const attempt = guard.once(key, () => ++runs);
    await waitFor(() => waits >= 1, 2_000, 'the guard to find the key busy');
    clock.advance(10_000);
    await expect(attempt).rejects.toSatisfy(
      (e: unknown) =>
        isTransientError(e) &&
        /still being processed by another worker after 10000ms/.test((e as Error).message),
    );
    expect(runs).toBe(0);
  });

  it('never runs fn unguarded when Redis is gone, and keeps the value when only storing it fails', async () => {
    const own = await TestRedis.start();
    // Fail fast instead of queueing commands until Redis returns.
    const client = new Redis({
      ...own.connection,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    client.on('error', () => {});
    await client.connect();
    try {
      const guard = redisIdempotencyGuard({ redis: client, ttlMs: 60_000, outcomeRetryDelayMs: 10 });
      let runs = 0;
      // Redis dies while the side effect runs: the caller still gets the value (its job must not retry).
      const value = await guard.once(freshKey(), async () => {
        runs += 1;
        await own.stop();
        return 'charged';
      });
      expect(value).toBe('charged');
      // Redis is gone before fn: the guard cannot claim the key, so fn does not run.
      await expect(guard.once(freshKey(), () => ++runs)).rejects.toThrow();
      expect(runs).toBe(1);
    } finally {
      client.disconnect();
      await own.close();
    }
  });

  it('refuses bad options and keys with a message that names them', async () => {
    expect(() => idempotencyGuard({ ttlMs: 1_000 } as unknown as IdempotencyGuardOptions)).toThrow(/redis/);
    const thrown = (() => {
      try {
        redisIdempotencyGuard({ redis, ttlMs: -1 });
      } catch (error) {
        return error;
      }
    })();
    expect(isValidationError(thrown) && (thrown as Error).message).toMatch(/ttlMs/);
    const guard = redisIdempotencyGuard({ redis });
    expect([guard.ttlMs, guard.inFlightTtlMs]).toEqual([86_400_000, 30_000]);
    await expect(guard.once('', () => 1)).rejects.toSatisfy(isInvalidInputError);
  });
});

/** The Redis store, with `finish` wrapped: `around` decides what each call (1, 2, …) does. */
function wrappedFinish(
  store: RedisIdempotencyStore,
  around: (call: number, finish: () => Promise<boolean>) => Promise<boolean>,
) {
  const real = store.finish.bind(store);
  let calls = 0;
  store.finish = (...args) => around(++calls, () => real(...args));
  return { store, calls: () => calls };
}

/** Records the guard's events as `event:key` (and `:attempts` for outcome-not-stored). */
function eventsOf(guard: ReturnType<typeof idempotencyGuard>): string[] {
  const seen: string[] = [];
  guard.events.on('claim-lost', (e) => seen.push(`claim-lost:${e.key}`));
  guard.events.on('duplicate-run', (e) => seen.push(`duplicate-run:${e.key}`));
  guard.events.on('outcome-not-stored', (e) => seen.push(`outcome-not-stored:${e.key}:${e.attempts}`));
  return seen;
}

describe('storing the outcome again after a rejected write', () => {
  it('retries a write that landed but whose reply was lost, and counts it as stored (no ClaimLostError)', async () => {
    const { store, calls } = wrappedFinish(new RedisIdempotencyStore(redis), async (call, finish) => {
      const stored = await finish();
      if (call === 1) throw new Error(`connection lost before the reply (the write returned ${stored})`);
      return stored;
    });
    const guard = idempotencyGuard({ store, ttlMs: 60_000, outcomeRetryDelayMs: 5 });
    const seen = eventsOf(guard);
    const key = freshKey();
    let runs = 0;
    const result = await guard.run(key, () => ({ receipt: `r-${++runs}` }));
    expect(result).toEqual({ value: { receipt: 'r-1' }, ran: true });
    expect(calls()).toBe(2);
    expect(seen).toEqual([]);
    // A replay (another worker) finds the outcome and does not run the side effect again.
    const replay = await redisIdempotencyGuard({ redis }).run(key, () => ({ receipt: `r-${++runs}` }));
    expect(replay).toEqual({ value: { receipt: 'r-1' }, ran: false });
    expect(runs).toBe(1);
  });

  it('retries a write that failed, and stores it on the next try', async () => {
    const { store, calls } = wrappedFinish(new RedisIdempotencyStore(redis), async (call, finish) => {
      if (call === 1) throw new Error('connection reset');
      return finish();
    });
    const guard = idempotencyGuard({ store, ttlMs: 60_000, outcomeRetryDelayMs: 5 });
    const seen = eventsOf(guard);
    const key = freshKey();
    expect(await guard.run(key, () => 'sent')).toEqual({ value: 'sent', ran: true });
    expect(calls()).toBe(2);
    expect(seen).toEqual([]);
    expect(await redisIdempotencyGuard({ redis }).run(key, () => 'again')).toEqual({
      value: 'sent',
      ran: false,
    });
  });

  it('retries when no replica confirms the outcome, then reports it not stored and still returns the value', async () => {
    // This Redis has no replica, so every WAIT falls short: a durability shortfall on each try.
    const durable = new RedisIdempotencyStore(redis, { durableWrites: { replicas: 1, timeoutMs: 20 } });
    const { store, calls } = wrappedFinish(durable, (_call, finish) => finish());
    const guard = idempotencyGuard({ store, ttlMs: 60_000, outcomeAttempts: 3, outcomeRetryDelayMs: 5 });
    const seen = eventsOf(guard);
    const key = freshKey();
    expect(await guard.run(key, () => 'charged')).toEqual({ value: 'charged', ran: true });
    expect(calls()).toBe(3);
    expect(seen).toEqual([`outcome-not-stored:${key}:3`]);
  });

  it('still rejects with ClaimLostError when another caller’s outcome is stored, however often it retries', async () => {
    const key = freshKey();
    const other = new RedisIdempotencyStore(redis);
    const { store, calls } = wrappedFinish(new RedisIdempotencyStore(redis), async (call, finish) => {
      if (call === 1) {
        // Our claim is taken over and another caller stores its outcome, then our write is rejected.
        await redis.del(other.keyOf(key));
        await other.begin(key, 'other-worker', 5_000);
        await other.finish(key, 'other-worker', JSON.stringify({ value: 'theirs' }), 60_000);
        throw new Error('connection reset');
      }
      return finish();
    });
    const guard = idempotencyGuard({ store, ttlMs: 60_000, outcomeRetryDelayMs: 5 });
    const seen = eventsOf(guard);
    const error = await guard.run(key, () => 'ours').catch((e: unknown) => e);
    expect(isClaimLostError(error)).toBe(true);
    expect(calls()).toBe(2);
    expect(seen).toEqual([`claim-lost:${key}`, `duplicate-run:${key}`]);
  });

  it('refuses outcomeAttempts below 1 and a negative outcomeRetryDelayMs, naming them', () => {
    expect(() => redisIdempotencyGuard({ redis, outcomeAttempts: 0 })).toThrow(/outcomeAttempts/);
    expect(() => redisIdempotencyGuard({ redis, outcomeRetryDelayMs: -1 })).toThrow(/outcomeRetryDelayMs/);
  });
});
