import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import type { AttemptEntry, DeadLetterRecord, DeadLetterStore } from '../../src/runtime/contracts.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import type { DeadLetterRedaction } from '../../src/runtime/redaction.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { TestRedis } from '../helpers/redis-server.js';

const SECRET = '4111-1111-1111-1111';
const STACK_SECRET = 'at chargeCard (/srv/app/card=4111)';

let server: TestRedis;
let redis: Redis;
const bed = postgresBed();
let pool: pg.Pool;
let run = 0;

beforeAll(async () => {
  server = await TestRedis.start();
  redis = new Redis(server.connection);
  pool = new pg.Pool({ connectionString: bed.url, max: 2 });
});
afterAll(async () => {
  redis?.disconnect();
  await server?.close();
  await pool?.end();
});

const redact: DeadLetterRedaction = (record) => {
  const data = record.data as { card: string; amount: number };
  data.card = '[redacted]'; // the hook gets a copy: changing it in place is fine
  return {
    ...record,
    data,
    queue: 'elsewhere', // not a redactable field: kept as it was
    lastError: {
      ...record.lastError,
      message: record.lastError.message.replaceAll(SECRET, '[card]'),
      stack: undefined,
    },
  };
};

/** Two attempts whose errors hold the secret, as a worker keeps them. */
const HISTORY: AttemptEntry[] = [1, 2].map((attempt) => ({
  attempt,
  at: 1_700_000_000_000 + attempt,
  dependency: 'search',
  error: { name: 'PaymentError', message: `attempt ${attempt}: card ${SECRET} declined` },
  classification: { retryable: true, reason: 'http-503' },
  decision: attempt === 1 ? 'retry' : 'dead-letter',
  cause: attempt === 1 ? 'backoff' : 'max-attempts',
  ...(attempt === 1 ? { delayMs: 500 } : {}),
}));

function secretRecord(): DeadLetterRecord {
  return sampleDeadLetter('pay-1', {
    history: HISTORY,
    queue: 'payments',
    data: { card: SECRET, amount: 42 },
    lastError: {
      name: 'PaymentError',
      message: `card ${SECRET} declined`,
      stack: `PaymentError: declined\n    ${STACK_SECRET}`,
      classification: { retryable: false, reason: 'permanent' },
    },
  });
}

/** Each backend's store with the hook, and everything it wrote, as text, read behind its back. */
const backends: [string, () => Promise<{ store: DeadLetterStore; raw: () => Promise<string> }>][] = [
  [
    'memory',
    async () => {
      const store = new MemoryDeadLetterStore({ redact });
      return {
        store,
        // Nothing but its own API reaches inside the memory store: everything it would hand out.
        raw: async () => JSON.stringify(await store.list('payments', { limit: 100 })),
      };
    },
  ],
  [
    'Redis',
    async () => {
      const prefix = `redact-${process.pid}-${++run}`;
      const store = new RedisDeadLetterStore({ redis, prefix, redact });
      return {
        store,
        raw: async () => {
          const parts: string[] = [];
          for (const key of await redis.keys(`*${prefix}*`)) {
            const type = await redis.type(key);
            if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(key)));
            else if (type === 'zset') parts.push(JSON.stringify(await redis.zrange(key, '0', '-1')));
            else if (type === 'string') parts.push(String(await redis.get(key)));
            else if (type === 'set') parts.push(JSON.stringify(await redis.smembers(key)));
            else parts.push(`${key}: ${type}`);
          }
          return parts.join('\n');
        },
      };
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const schema = uniqueSchema();
      const store = new PostgresDeadLetterStore({ connection: pool, schema, redact });
      return {
        store,
        raw: async () => {
          const tables = ['dead_letters', 'attempt_states', 'dead_letter_queues'];
          const dumps = await Promise.all(
            tables.map((t) => pool.query(`SELECT row_to_json(t)::text AS row FROM ${schema}.${t} t`)),
          );
          return dumps.flatMap((d) => d.rows.map((r: { row: string }) => r.row)).join('\n');
        },
      };
    },
  ],
];

describe('the dead-letter redaction hook', () => {
  for (const [name, open] of backends)
    it(`${name}: the raw value never reaches the store; identity and indexes stay the original's`, async () => {
      const { store, raw } = await open();
      const { id } = await store.file(
        secretRecord(),
        { attempts: 2, deferrals: 0, history: HISTORY },
        60_000,
      );
      const stored = await store.get('payments', id);
      expect(stored).toMatchObject({
        queue: 'payments',
        jobId: 'pay-1',
        data: { card: '[redacted]', amount: 42 },
        lastError: { name: 'PaymentError', message: 'card [card] declined' },
      });
      // Each attempt's error went through the hook as a lastError would; the rest of each entry is kept.
      expect((stored as DeadLetterRecord).history).toEqual([
        { ...HISTORY[0], error: { name: 'PaymentError', message: 'attempt 1: card [card] declined' } },
        { ...HISTORY[1], error: { name: 'PaymentError', message: 'attempt 2: card [card] declined' } },
      ]);
      expect((stored as DeadLetterRecord).lastError.stack).toBeUndefined();
      const everything = await raw();
      expect(everything).toContain('[redacted]');
      expect(everything).not.toContain(SECRET);
      expect(everything).not.toContain(STACK_SECRET);
      expect(await store.count('payments', { dependency: 'search' })).toBe(1);
    });

  it('stores nothing when the hook throws or returns no record, and says why', async () => {
    const store = new MemoryDeadLetterStore({
      redact: () => {
        throw new Error('vault unreachable');
      },
    });
    expect(() => store.file(secretRecord(), { attempts: 1, deferrals: 0 }, 60_000)).toThrow(
      'dead-letter redaction of payments/pay-1 failed, so the record was not stored: vault unreachable',
    );
    const none = new MemoryDeadLetterStore({ redact: () => undefined as never });
    expect(() => none.file(secretRecord(), { attempts: 1, deferrals: 0 }, 60_000)).toThrow(
      /returned undefined, so the record was not stored/,
    );
    expect(await store.count('payments')).toBe(0);
  });
});
