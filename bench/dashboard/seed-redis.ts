/**
 * Fills a queue of the Redis dead-letter store with `n` records in the store's own layout
 * (`src/redis/lua/includes/dead-letters.lua`), in pipelined batches instead of one filing script per
 * record: the record hash, the index-entry hash, the four sorted sets, each job's attempt state (with its
 * expiry time and TTL), the id counter, and the queue's registration through the store itself.
 * `checkRedisLayout` first files a few records through the store's filing script and writes the same
 * records the fast way under another queue, and refuses to go on unless both wrote the same keys and values.
 */
import type { Redis } from 'ioredis';
import { encodeKeyPart as encoded, globalKey, queueTag } from '../../src/common/keys.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import {
  ATTEMPTS_TTL_MS,
  FINAL_STATE,
  FIRST_AT,
  fromParts,
  indexedOf,
  record,
  recordJsonParts,
  stateJsonParts,
} from './records.js';

const BATCH = 2_000;

/** Writes records 0..n-1 of `queue` (ids 1..n) the fast way. */
export async function seedRedis(redis: Redis, prefix: string, queue: string, n: number): Promise<void> {
  const store = new RedisDeadLetterStore({ redis, prefix });
  await store.registerQueue(queue);
  const tag = queueTag(prefix, queue);
  const key = (suffix: string) => `${tag}:${suffix}`;
  const pieces = { common: recordJsonParts(queue, false), rare: recordJsonParts(queue, true) };
  const states = { common: stateJsonParts(queue, false), rare: stateJsonParts(queue, true) };
  let inFlight: Promise<unknown> | undefined;
  for (let from = 0; from < n; from += BATCH) {
    const to = Math.min(n, from + BATCH);
    const [seconds, micros] = await redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const recs: string[] = [];
    const ixs: string[] = [];
    const all: (string | number)[] = [];
    const byIndex = new Map<string, (string | number)[]>();
    const pipeline = redis.pipeline();
    for (let i = from; i < to; i++) {
      const id = String(i + 1);
      const at = FIRST_AT + i;
      const member = id.padStart(16, '0');
      const { reason, dependency, name } = indexedOf(i);
      const kind = reason === 'permanent' ? 'rare' : 'common';
      const indexKeys = [
        key(`dl:r:${encoded(reason)}`),
        key(`dl:d:${encoded(dependency)}`),
        key(`dl:n:${encoded(name)}`),
      ];
      recs.push(id, fromParts(pieces[kind], i));
      ixs.push(id, JSON.stringify([String(at), ...indexKeys]));
      all.push(at, member);
      for (const k of indexKeys) {
        const list = byIndex.get(k) ?? [];
        if (list.length === 0) byIndex.set(k, list);
        list.push(at, member);
      }
      const state = states[kind];
      pipeline.set(
        key(`att:${encoded(`doc-${i}`)}:${i}`),
        `${now + ATTEMPTS_TTL_MS}|${fromParts(state, i)}`,
        'PX',
        ATTEMPTS_TTL_MS,
      );
    }
    pipeline.hset(key('dl:rec'), ...recs);
    pipeline.hset(key('dl:ix'), ...ixs);
    pipeline.zadd(key('dl:all'), ...all);
    for (const [k, list] of byIndex) pipeline.zadd(k, ...list);
    // One batch written while the next is built.
    await inFlight;
    inFlight = pipeline.exec().then(failOnError);
  }
  await inFlight;
  await redis.set(key('dl:seq'), String(n));
}

function failOnError(results: [Error | null, unknown][] | null): void {
  const failed = results?.find(([error]) => error);
  if (failed) throw failed[0];
}

/**
 * Files records 0..count-1 through the store (queue `check-store`) and seeds the same ones the fast way
 * (queue `check-seed`), then compares every key of the two queues, the queue's name and times aside.
 * Throws naming the first difference.
 */
export async function checkRedisLayout(redis: Redis, prefix: string, count = 4): Promise<void> {
  const store = new RedisDeadLetterStore({ redis, prefix });
  for (let i = 0; i < count; i++) await store.file(record('check-store', i), FINAL_STATE, ATTEMPTS_TTL_MS);
  await seedRedis(redis, prefix, 'check-seed', count);
  const filed = await dump(redis, prefix, 'check-store');
  const seeded = await dump(redis, prefix, 'check-seed');
  const keys = new Set([...filed.keys(), ...seeded.keys()]);
  for (const k of keys)
    if (filed.get(k) !== seeded.get(k))
      throw new Error(
        `the Redis seed differs from the store's filing at ${k}:\n  filed:  ${filed.get(k)}\n  seeded: ${seeded.get(k)}`,
      );
  if (keys.size < 8 + count) throw new Error(`the layout check saw only ${keys.size} keys`);
}

/** Every key of a queue and its value, with the queue's tag and name and the times replaced. */
async function dump(redis: Redis, prefix: string, queue: string): Promise<Map<string, string>> {
  const tag = queueTag(prefix, queue);
  const normal = (text: string) => text.replaceAll(tag, '<tag>').replaceAll(queue, '<queue>');
  const out = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(
      cursor,
      'MATCH',
      `${tag.replace(/[*?[\]\\]/g, '\\$&')}*`,
      'COUNT',
      1000,
    );
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      let value: string;
      if (type === 'string') {
        const text = (await redis.get(key)) ?? '';
        const ttl = await redis.pttl(key);
        // "<expiresAtMs>|<state>": the time differs between the two writes, the rest must not.
        value = `${text.replace(/^\d+\|/, '<expires>|')} ttl:${ttl > 0 && ttl <= ATTEMPTS_TTL_MS ? 'set' : ttl}`;
      } else if (type === 'hash') {
        const fields = await redis.hgetall(key);
        if ('registeredAt' in fields) fields.registeredAt = '<time>';
        value = JSON.stringify(Object.entries(fields).sort());
      } else if (type === 'zset') value = JSON.stringify(await redis.zrange(key, '0', '-1', 'WITHSCORES'));
      else value = `<${type}>`;
      out.set(normal(key), normal(value));
    }
  } while (cursor !== '0');
  const registered = await redis.hexists(globalKey(prefix, 'dlq-queues'), queue);
  out.set('<registry>', String(registered));
  return out;
}
