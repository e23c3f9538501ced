import type { AuditLog } from '../audit/types.js';
import type { Clock } from '../common/clock.js';
import { DEFAULT_PREFIX, encodeKeyPart, globalKey, queueTag } from '../common/keys.js';
import { assertPrefix } from '../common/names.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import type {
  AttemptState,
  DeadLetterEvictions,
  DeadLetterFiling,
  DeadLetterFilter,
  DeadLetterPage,
  DeadLetterPageRequest,
  DeadLetterQueueSummary,
  DeadLetterRecord,
  DeadLetterStore,
  JobRef,
  MalformedDeadLetter,
  ReplayClaim,
  RetentionLimits,
  StoredDeadLetter,
} from '../runtime/contracts.js';
import { decodeCursor } from '../runtime/dead-letter-cursor.js';
import {
  assertDeadLetterRecord,
  isMalformedDeadLetter,
  parseDeadLetterFilter,
  readStoredRecord,
} from '../runtime/dead-letter-record.js';
import {
  assertRetention,
  auditEvictions,
  finalStateOf,
  MAX_EVICTIONS_PER_FILING,
} from '../runtime/dead-letter-store-rules.js';
import { type DeadLetterRedaction, redactRecord } from '../runtime/redaction.js';
import { type RedisConnection, redisClientOf } from './connection.js';
import {
  type DurableWrites,
  type DurableWritesOption,
  resolveDurableWrites,
  runDurably,
} from './durable-writes.js';
import { KeyBatches } from './key-batches.js';
import { defineScript, type RedisClient, type ScriptSpec } from './scripts.js';

/**
 * Options of {@link RedisDeadLetterStore}.
 *
 * @example
 * const options: RedisDeadLetterStoreOptions = { redis: new Redis(url), prefix: 'shop' };
 */
export interface RedisDeadLetterStoreOptions {
  /**
   * Applied to every record before it is stored (see {@link DeadLetterRedaction}): set it once here, and
   * nothing downstream (the CLI, the console, replays, the audit log) ever sees the raw values. Default
   * none.
   */
  redact?: DeadLetterRedaction;
  /**
   * Your ioredis client (a `Redis` or a `Cluster`), which the store never closes; or ioredis options
   * (`{ host, port }`) or a `redis://` URL, from which it opens a client of its own, closed by `close()`.
   */
  redis: RedisConnection;
  /** Key prefix, any 1-64 characters (encoded into keys). Default `stormguard`. */
  prefix?: string;
  /**
   * TEST ONLY: take time from this clock instead of the Redis server's `TIME`, so the conformance suite can
   * run retention and expiry cases on a fake clock. In production leave it unset.
   */
  clock?: Clock;
  /**
   * Whether `file` waits until a replica has the record (`WAIT`), so a failover cannot lose it: `true` (one
   * replica, up to 1 s), `{ replicas, timeoutMs }`, or `false`. A filing no replica acknowledged in time
   * rejects (filing again is safe: it is idempotent per job). Default: `true` on a Redis Cluster client,
   * `false` on a single Redis.
   */
  durableWrites?: DurableWritesOption;
  /**
   * Where each filing that evicts records writes one entry (`dead-letters.evict`: how many, by reason and
   * by limit), e.g. a `RedisAuditLog` on the same Redis. Default none.
   */
  audit?: AuditLog;
}

const OPTION_NAMES = {
  redact: true,
  redis: true,
  prefix: true,
  clock: true,
  durableWrites: true,
  audit: true,
} as const satisfies OptionNames<RedisDeadLetterStoreOptions>;

/**
 * The version of the dead-letter key layout (see `lua/includes/dead-letters.lua`), kept in
 * `{<prefix>:g}:dlq-schema`. A store refuses to work on keys a newer layout wrote.
 *
 * @example
 * DEAD_LETTER_SCHEMA_VERSION; // 1
 */
export const DEAD_LETTER_SCHEMA_VERSION = 1;

const SCRIPTS = {
  file: { command: 'stormguardDlqFileV2', file: 'dlq-file-10.lua', numberOfKeys: 10 },
  list: { command: 'stormguardDlqListV1', file: 'dlq-list-7.lua', numberOfKeys: 7, readOnly: true },
  count: { command: 'stormguardDlqCountV2', file: 'dlq-count-5.lua', numberOfKeys: 5, readOnly: true },
  claim: { command: 'stormguardDlqClaimV1', file: 'dlq-claim-2.lua', numberOfKeys: 2 },
  remove: { command: 'stormguardDlqRemoveV1', file: 'dlq-remove-4.lua', numberOfKeys: 4 },
  configure: { command: 'stormguardDlqConfigureV1', file: 'dlq-configure-1.lua', numberOfKeys: 1 },
  readAttempts: {
    command: 'stormguardAttemptsReadV1',
    file: 'attempts-read-1.lua',
    numberOfKeys: 1,
    readOnly: true,
  },
  writeAttempts: { command: 'stormguardAttemptsWriteV1', file: 'attempts-write-1.lua', numberOfKeys: 1 },
} as const satisfies Record<string, ScriptSpec>;

type Script = ReturnType<typeof defineScript>;

/** How many index entries one `list` call looks at, at most, beyond the page itself. */
const LOOK_AHEAD = 1_000;
/**
 * How many index entries one `count` call looks at, at most, when several filter fields must be checked
 * record by record: about a millisecond of Redis time, so a count over a large queue never blocks Redis.
 */
const COUNT_CHUNK = 1_000;
/** The record id's stand-in in the attempt state's JSON (split there, the script writes the id between). */
const ID_MARK = '"recordId":"\\u0000"';

/** The keys of one queue, all under its hash tag. */
class QueueKeys {
  readonly tag: string;
  constructor(prefix: string, queue: string) {
    this.tag = queueTag(prefix, queue);
  }
  get seq() {
    return `${this.tag}:dl:seq`;
  }
  get rec() {
    return `${this.tag}:dl:rec`;
  }
  get ix() {
    return `${this.tag}:dl:ix`;
  }
  get claim() {
    return `${this.tag}:dl:claim`;
  }
  get all() {
    return `${this.tag}:dl:all`;
  }
  get meta() {
    return `${this.tag}:dl:meta`;
  }
  reason(value: string) {
    return `${this.tag}:dl:r:${encodeKeyPart(value)}`;
  }
  dependency(value: string) {
    return `${this.tag}:dl:d:${encodeKeyPart(value)}`;
  }
  name(value: string) {
    return `${this.tag}:dl:n:${encodeKeyPart(value)}`;
  }
  attempts(job: JobRef) {
    return `${this.tag}:att:${encodeKeyPart(job.jobId)}:${job.createdAt}`;
  }
  /** The three filter indexes as the list and count scripts take them, and which of them filter. */
  filterKeys(filter: DeadLetterFilter): { keys: string[]; flags: string } {
    const pick = [
      filter.reason === undefined ? undefined : this.reason(filter.reason),
      filter.dependency === undefined ? undefined : this.dependency(filter.dependency),
      filter.name === undefined ? undefined : this.name(filter.name),
    ];
    return {
      keys: pick.map((key) => key ?? this.all),
      flags: pick.map((key) => (key === undefined ? '0' : '1')).join(''),
    };
  }
}

/**
 * The dead-letter store on Redis (ioredis, single node or Cluster). Every operation is one Lua script, one
 * round trip (a count with several filter fields, one per chunk of 1 000 entries), with time from the Redis
 * server. A queue's keys all start with its hash tag
 * `{<prefix>:q:<queue>}` (both encoded, see `src/common/keys.ts`), so filing is atomic with the job's
 * attempt state and Redis Cluster works; queue names, dependencies and job names are encoded into keys,
 * so no two of them share an index.
 *
 * Layout: one hash of records (JSON) per queue, a sorted set of every record and one per reason,
 * dependency and job name, scored by `deadLetteredAt`. Listing walks the smallest index the filter
 * names, so its cost follows the page and the filter's matches, not the queue's size; counting with one
 * filter field is one `ZCOUNT`, with several a walk of the smallest index in calls of at most 1 000
 * entries (on Redis 7, one `ZINTERCARD` instead when there is no time range and that index holds at most
 * 10 000). Record ids come from a per-queue counter that is never reset.
 * The queue registry is `{<prefix>:g}:dlq-queues`; the layout version `{<prefix>:g}:dlq-schema`.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { RedisDeadLetterStore } from 'stormguard/redis';
 *
 * const store = new RedisDeadLetterStore({ redis: new Redis(process.env.REDIS_URL) });
 * await store.registerQueue('index', { maxAgeMs: 30 * 86_400_000, maxCount: 100_000 });
 * const page = await store.list('index', { reason: 'budget-exhausted', limit: 50 });
 */
export class RedisDeadLetterStore implements DeadLetterStore {
  readonly prefix: string;
  readonly #redis: RedisClient;
  readonly #clock: Clock | undefined;
  readonly #durable: DurableWrites | undefined;
  readonly #scripts: { [K in keyof typeof SCRIPTS]: Script };
  readonly #registered = new Set<string>();
  readonly #redact: DeadLetterRedaction | undefined;
  readonly #audit: AuditLog | undefined;
  /** The store's redaction hook: the worker redacts the errors it hands its queue with it too. */
  get redaction(): DeadLetterRedaction | undefined {
    return this.#redact;
  }
  readonly #closeClient: () => Promise<void>;
  #schemaChecked: Promise<void> | undefined;
  /** Attempt-state reads (`MGET`) and clears (`DEL`) on the server's time, shared per queue hash tag. */
  readonly #reads: KeyBatches<string | null>;
  readonly #clears: KeyBatches<unknown>;

  constructor(options: RedisDeadLetterStoreOptions) {
    checkOptionNames('RedisDeadLetterStore', options, OPTION_NAMES);
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    assertPrefix(prefix);
    this.prefix = prefix;
    const { redis, close } = redisClientOf('RedisDeadLetterStore', options.redis);
    this.#redis = redis;
    this.#closeClient = close;
    this.#clock = options.clock;
    this.#redact = options.redact;
    this.#audit = options.audit;
    this.#durable = resolveDurableWrites(redis, options.durableWrites);
    this.#reads = new KeyBatches((keys) => redis.mget(...keys));
    this.#clears = new KeyBatches<unknown>(async (keys) => {
      await redis.del(...keys);
      return [];
    });
    this.#scripts = Object.fromEntries(
      Object.entries(SCRIPTS).map(([name, spec]) => [name, defineScript(redis, spec)]),
    ) as { [K in keyof typeof SCRIPTS]: Script };
  }

  /** Closes the client the store opened from options or a URL; a client you passed stays open. */
  async close(): Promise<void> {
    await this.#closeClient();
  }

  get #registryKey(): string {
    return globalKey(this.prefix, 'dlq-queues');
  }

  get #schemaKey(): string {
    return globalKey(this.prefix, 'dlq-schema');
  }

  async registerQueue(queue: string, retention?: RetentionLimits): Promise<void> {
    if (retention !== undefined) assertRetention(retention);
    await this.#checkSchema();
    const keys = new QueueKeys(this.prefix, queue);
    const registeredAt = (await this.#scripts.configure(
      [keys.meta],
      [
        retention === undefined ? '0' : '1',
        retention?.maxAgeMs ?? '',
        retention?.maxCount ?? '',
        this.#now(),
      ],
    )) as number;
    await this.#redis.hsetnx(this.#registryKey, queue, String(registeredAt));
    await this.#redis.set(this.#schemaKey, String(DEAD_LETTER_SCHEMA_VERSION), 'NX');
    this.#registered.add(queue);
  }

  async queues(): Promise<DeadLetterQueueSummary[]> {
    await this.#checkSchema();
    const names = Object.keys(await this.#redis.hgetall(this.#registryKey)).sort();
    const summaries = await Promise.all(names.map((name) => this.queue(name)));
    return summaries.filter((s): s is DeadLetterQueueSummary => s !== undefined);
  }

  async queue(queue: string): Promise<DeadLetterQueueSummary | undefined> {
    await this.#checkSchema();
    const keys = new QueueKeys(this.prefix, queue);
    const [registered, meta, count] = await Promise.all([
      this.#redis.hexists(this.#registryKey, queue),
      this.#redis.hmget(keys.meta, 'registeredAt', 'maxAgeMs', 'maxCount', 'evicted'),
      this.#redis.zcard(keys.all),
    ]);
    if (!registered) return undefined;
    const [registeredAt, maxAgeMs, maxCount, evicted] = meta;
    const retention: RetentionLimits = {};
    if (maxAgeMs) retention.maxAgeMs = Number(maxAgeMs);
    if (maxCount) retention.maxCount = Number(maxCount);
    return {
      queue,
      count,
      evicted: Number(evicted ?? 0),
      registeredAt: Number(registeredAt ?? 0),
      retention,
    };
  }

  async file(record: DeadLetterRecord, finalState: AttemptState, ttlMs: number): Promise<DeadLetterFiling> {
    record = redactRecord(record, this.#redact);
    assertDeadLetterRecord(record);
    if (!this.#registered.has(record.queue)) await this.registerQueue(record.queue);
    const keys = new QueueKeys(this.prefix, record.queue);
    const [head, tail] = splitAtId(JSON.stringify(finalStateOf(record, finalState, '\u0000')));
    const fileKeys = [
      keys.seq,
      keys.rec,
      keys.ix,
      keys.claim,
      keys.all,
      keys.reason(record.reason),
      keys.dependency(record.dependency),
      keys.name(record.name),
      keys.attempts(record),
      keys.meta,
    ];
    const fileArgs = [
      JSON.stringify(record),
      record.deadLetteredAt,
      head,
      tail,
      Math.max(1, Math.ceil(ttlMs)),
      this.#now(),
      MAX_EVICTIONS_PER_FILING,
    ];
    const [created, id, report] = (
      this.#durable
        ? await runDurably(this.#redis, SCRIPTS.file, fileKeys, fileArgs, this.#durable)
        : await this.#scripts.file(fileKeys, fileArgs)
    ) as [number, string, string | undefined];
    const filing: DeadLetterFiling = { id: String(id), created: created === 1 };
    if (!report) return filing;
    const evicted = JSON.parse(report) as DeadLetterEvictions;
    return this.#audit
      ? auditEvictions(this.#audit, record.queue, { ...filing, evicted })
      : { ...filing, evicted };
  }

  async get(queue: string, id: string): Promise<StoredDeadLetter | MalformedDeadLetter | undefined> {
    await this.#checkSchema();
    if (!/^\d+$/.test(id)) return undefined;
    const keys = new QueueKeys(this.prefix, queue);
    const [score, text, claim] = await Promise.all([
      this.#redis.zscore(keys.all, id.padStart(16, '0')),
      this.#redis.hget(keys.rec, id),
      this.#redis.hget(keys.claim, id),
    ]);
    if (score === null) return undefined;
    return withClaim(readStoredRecord(id, text), claim);
  }

  async list(queue: string, page: DeadLetterPageRequest): Promise<DeadLetterPage> {
    const { limit, cursor, newestFirst = false, ...rest } = page;
    const filter = parseDeadLetterFilter(rest);
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    await this.#checkSchema();
    const keys = new QueueKeys(this.prefix, queue);
    const { keys: filterKeys, flags } = keys.filterKeys(filter);
    const reply = (await this.#scripts.list(
      [keys.all, ...filterKeys, keys.rec, keys.ix, keys.claim],
      [
        newestFirst ? 'desc' : 'asc',
        after?.at ?? '',
        after?.seq ?? '',
        filter.since ?? '-inf',
        filter.before ?? '+inf',
        Math.max(0, limit) + LOOK_AHEAD,
        Math.max(0, limit),
        flags,
      ],
    )) as (string | null)[];
    const out: DeadLetterPage = { records: [], malformed: [] };
    if (reply[0]) out.next = reply[0];
    for (let i = 1; i + 3 < reply.length; i += 4) {
      const entry = withClaim(readStoredRecord(String(reply[i]), reply[i + 2]), reply[i + 3]);
      if (isMalformedDeadLetter(entry)) out.malformed.push(entry);
      else out.records.push(entry);
    }
    return out;
  }

  async count(queue: string, filter: DeadLetterFilter = {}): Promise<number> {
    const parsed = parseDeadLetterFilter(filter);
    await this.#checkSchema();
    const keys = new QueueKeys(this.prefix, queue);
    const { keys: filterKeys, flags } = keys.filterKeys(parsed);
    // One call per chunk of the walked index, resumed at a cursor: records filed or removed between two
    // calls may or may not be counted, as with a listing's pages.
    let total = 0;
    let cursor = '';
    do {
      const split = cursor.lastIndexOf('_');
      const [n, next] = (await this.#scripts.count(
        [keys.all, ...filterKeys, keys.ix],
        [
          parsed.since ?? '-inf',
          parsed.before ?? '+inf',
          flags,
          cursor ? cursor.slice(0, split) : '',
          cursor ? cursor.slice(split + 1) : '',
          COUNT_CHUNK,
        ],
      )) as [number, string];
      total += Number(n);
      cursor = next;
    } while (cursor !== '');
    return total;
  }

  async claimReplay(queue: string, id: string, jobId: string): Promise<ReplayClaim | undefined> {
    if (!/^\d+$/.test(id)) return undefined;
    const keys = new QueueKeys(this.prefix, queue);
    const reply = (await this.#scripts.claim([keys.all, keys.claim], [id, jobId, this.#now()])) as
      | string
      | null;
    return reply === null ? undefined : (parseClaim(reply) ?? { jobId, claimedAt: 0 });
  }

  completeReplay(queue: string, id: string): Promise<boolean> {
    return this.remove(queue, id);
  }

  async remove(queue: string, id: string): Promise<boolean> {
    if (!/^\d+$/.test(id)) return false;
    const keys = new QueueKeys(this.prefix, queue);
    return (await this.#scripts.remove([keys.rec, keys.ix, keys.claim, keys.all], [id])) === 1;
  }

  /**
   * One `MGET` on the server's time, shared: reads of one queue asked while its `MGET` is in flight wait and
   * go together in the next ({@link KeyBatches}). The key's own expiry (`PX`) is the state's, so nothing
   * else is read. On the test-only clock, a script compares the expiry kept in the value with that clock.
   */
  async readAttempts(job: JobRef): Promise<AttemptState | undefined> {
    const keys = new QueueKeys(this.prefix, job.queue);
    const key = keys.attempts(job);
    const text = this.#clock
      ? ((await this.#scripts.readAttempts([key], [this.#now()])) as string | null)
      : stateText(await this.#reads.request(keys.tag, key));
    if (text === null) return undefined;
    try {
      return JSON.parse(text) as AttemptState;
    } catch {
      return undefined;
    }
  }

  /**
   * One `SET … PX` on the server's time (the retry path's only write here): the key expires on the server's
   * clock, and the expiry kept in the value, which only a store on the test-only clock compares, is
   * {@link NO_CLOCK_EXPIRY}. On the test-only clock, a script writes that clock's expiry.
   */
  async writeAttempts(job: JobRef, state: AttemptState, ttlMs: number): Promise<void> {
    const key = new QueueKeys(this.prefix, job.queue).attempts(job);
    const px = Math.max(1, Math.ceil(ttlMs));
    if (!this.#clock) {
      await this.#redis.set(key, `${NO_CLOCK_EXPIRY}|${JSON.stringify(state)}`, 'PX', px);
      return;
    }
    await this.#scripts.writeAttempts([key], [JSON.stringify(state), px, this.#now()]);
  }

  /**
   * One `DEL`, shared: clears of one queue asked while its `DEL` is in flight wait for it and go together in
   * the next ({@link KeyBatches}), so a busy worker clears several completed jobs' states per command.
   */
  async clearAttempts(job: JobRef): Promise<void> {
    const keys = new QueueKeys(this.prefix, job.queue);
    await this.#clears.request(keys.tag, keys.attempts(job));
  }

  #now(): number | '' {
    return this.#clock ? this.#clock.now() : '';
  }

  /** Once per store: refuses keys a newer layout wrote, rather than misreading them. */
  #checkSchema(): Promise<void> {
    this.#schemaChecked ??= (async () => {
      const version = await this.#redis.get(this.#schemaKey);
      if (version !== null && Number(version) > DEAD_LETTER_SCHEMA_VERSION)
        throw new Error(
          `dead-letter store: the keys under prefix "${this.prefix}" have layout version ${version}, newer than this stormguard's ${DEAD_LETTER_SCHEMA_VERSION}; upgrade stormguard`,
        );
    })().catch((error: unknown) => {
      this.#schemaChecked = undefined;
      throw error;
    });
    return this.#schemaChecked;
  }
}

/**
 * The expiry a store on the server's time keeps in an attempt state's value (`<expiresAtMs>|<JSON>`): never,
 * as readers on the test-only clock and earlier versions' read script compare it. The key's `PX` expires it.
 */
const NO_CLOCK_EXPIRY = Number.MAX_SAFE_INTEGER;

/** The attempt state's JSON in a stored value (`<expiresAtMs>|<JSON>`, see lua/includes/dead-letters.lua). */
function stateText(value: string | null): string | null {
  const bar = value?.indexOf('|') ?? -1;
  return value && bar > 0 ? value.slice(bar + 1) : null;
}

function splitAtId(json: string): [string, string] {
  const at = json.indexOf(ID_MARK);
  return [`${json.slice(0, at)}"recordId":"`, `"${json.slice(at + ID_MARK.length)}`];
}

function parseClaim(text: string | null | undefined): ReplayClaim | undefined {
  if (!text) return undefined;
  try {
    const { jobId, claimedAt } = JSON.parse(text) as ReplayClaim;
    return typeof jobId === 'string' && typeof claimedAt === 'number' ? { jobId, claimedAt } : undefined;
  } catch {
    return undefined;
  }
}

function withClaim(
  entry: StoredDeadLetter | MalformedDeadLetter,
  claim: string | null | undefined,
): StoredDeadLetter | MalformedDeadLetter {
  const parsed = parseClaim(claim);
  if (parsed && !isMalformedDeadLetter(entry)) entry.replay = parsed;
  return entry;
}
