import type { Command } from 'commander';
import type { LegacyMovePreview, LegacyMoveReport } from '../../bullmq/legacy-dead-letters.js';
import { formatDuration } from '../../common/duration.js';
import { DEFAULT_PREFIX } from '../../common/keys.js';
import { assertPrefix } from '../../common/names.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { MigrationReport } from '../../postgres/migrations.js';
import { migrate, migrations } from '../../postgres/migrations.js';
import { assertSchema } from '../../postgres/schema.js';
import type { DeadLetterStore } from '../../runtime/contracts.js';
import { withPostgres } from '../connect-postgres.js';
import { connectRedis } from '../connect-redis.js';
import { type CliIO, printJson } from '../io.js';
import { withExamples, withPostgresOption } from '../options.js';

interface MigrateFlags {
  postgres?: string;
  schema: string;
  redis?: string;
  deadLettersOf?: string[];
  prefix: string;
  bullPrefix: string;
  allowEvict?: boolean;
  json?: boolean;
}

/**
 * `stormguard migrate`: brings stormguard's storage up to date.
 *
 * - `--postgres URL [--schema S]` creates or upgrades stormguard's tables in a PostgreSQL schema, the same
 *   migrations the stores run on first use (numbered, in one transaction, under an advisory lock, so
 *   running it while workers start is safe). For deploys whose workers may not create tables
 *   (`migrate: false` in the stores).
 * - `--dead-letters-of QUEUE` (repeatable) moves the records of the BullMQ queue `QUEUE-dlq` (where
 *   stormguard kept dead letters before the dead-letter store) into the store: the Redis one on `--redis`,
 *   or the PostgreSQL one with `--postgres`. BullMQ's public API only (`getJobs`, then `remove` once filed);
 *   safe to interrupt and run again. Before it deletes anything it counts what the queue's retention would
 *   drop (records already past `maxAgeMs`, which the next filing drops, and what remains beyond
 *   `maxCount`), and refuses (exit 2) unless `--allow-evict` says to move them anyway. Evicting filings are
 *   written to the audit log.
 *
 * @example
 * stormguard migrate --postgres postgres://admin@db:5432/shop --schema stormguard --json
 * stormguard migrate --redis redis://10.0.0.5:6379 --dead-letters-of index --dead-letters-of mail
 */
export function register(program: Command, io: CliIO): void {
  withExamples(withPostgresOption(program.command('migrate')), [
    'stormguard migrate --postgres postgres://admin@db:5432/shop',
    'stormguard migrate --postgres "$DATABASE_URL" --schema shop_retries --json',
    'stormguard migrate --redis redis://10.0.0.5:6379 --dead-letters-of index',
  ])
    .description(
      "create or upgrade stormguard's PostgreSQL tables, and move old <queue>-dlq dead letters into the store (safe to run again)",
    )
    .option('--redis <url>', 'Redis of the old <queue>-dlq queues (and of the store, without --postgres)')
    .option(
      '--dead-letters-of <queue>',
      'move the BullMQ queue <queue>-dlq into the dead-letter store (repeatable)',
      collect,
    )
    .option('--prefix <prefix>', 'stormguard key prefix of the dead-letter store', DEFAULT_PREFIX)
    .option('--bull-prefix <prefix>', 'BullMQ key prefix of the old <queue>-dlq queues', 'bull')
    .option(
      '--allow-evict',
      "move dead letters even when the queue's retention (maxAgeMs, maxCount) would drop some of them",
    )
    .option('--json', 'print JSON')
    .action(async (flags: MigrateFlags) => {
      const queues = flags.deadLettersOf ?? [];
      if (flags.postgres === undefined && queues.length === 0)
        throw new InvalidInputError(
          '--postgres: required unless moving dead letters; name the database, e.g. --postgres postgres://admin@db:5432/shop, or --dead-letters-of <queue> --redis <url>',
        );
      if (queues.length > 0 && flags.redis === undefined)
        throw new InvalidInputError(
          '--dead-letters-of: needs --redis <url>, the Redis the old <queue>-dlq queues are on',
        );
      for (const queue of queues)
        if (queue === '' || queue.includes(':'))
          throw new InvalidInputError(
            `--dead-letters-of: "${queue}" is not a BullMQ queue name (non-empty, no ':')`,
          );
      assertSchema(flags.schema);
      assertPrefix(flags.prefix);

      let schema: MigrationReport | undefined;
      let moved: LegacyMoveReport[] = [];
      if (flags.postgres !== undefined) {
        const url = flags.postgres;
        await withPostgres(url, async (pool) => {
          schema = await migrate(pool, flags.schema);
          if (queues.length === 0) return;
          const [{ PostgresDeadLetterStore }, { PostgresAuditLog }] = await Promise.all([
            import('../../postgres/dead-letter-store.js'),
            import('../../postgres/audit-log.js'),
          ]);
          const common = { connection: pool, schema: flags.schema, prefix: flags.prefix };
          const store = new PostgresDeadLetterStore({ ...common, audit: new PostgresAuditLog(common) });
          moved = await moveAll(flags, queues, store);
        });
      } else {
        moved = await moveAll(flags, queues);
      }

      if (flags.json)
        printJson(io, { ...(schema ?? {}), ...(queues.length > 0 ? { deadLetters: moved } : {}) });
      else io.stdout.write(describe(schema, moved, flags.allowEvict === true));
      if (moved.some((m) => m.kept.length > 0)) io.exitCode = 1;
    });
}

/**
 * Moves each queue's old dead letters into `store` (the Redis store on `--redis` when none is given),
 * with one Redis connection for the old queues.
 */
async function moveAll(
  flags: MigrateFlags,
  queues: string[],
  store?: DeadLetterStore,
): Promise<LegacyMoveReport[]> {
  const redis = await connectRedis(flags.redis as string);
  try {
    const [
      { Queue },
      { moveLegacyDeadLetters, previewLegacyMove },
      { RedisDeadLetterStore },
      { RedisAuditLog },
    ] = await Promise.all([
      import('bullmq'),
      import('../../bullmq/legacy-dead-letters.js'),
      import('../../redis/dead-letter-store.js'),
      import('../../redis/audit-log.js'),
    ]);
    const target =
      store ??
      new RedisDeadLetterStore({
        redis,
        prefix: flags.prefix,
        audit: new RedisAuditLog({ redis, prefix: flags.prefix }),
      });
    const open = (queue: string) =>
      new Queue(`${queue}-dlq`, { connection: redis as never, prefix: flags.bullPrefix });
    // Every queue is counted before any record moves: a refusal leaves every source as it was.
    const previews: LegacyMovePreview[] = [];
    for (const queue of queues) {
      const from = open(queue);
      try {
        previews.push(await previewLegacyMove({ from, queue, store: target }));
      } finally {
        await from.close();
      }
    }
    const losing = previews.filter((p) => p.wouldEvict.total > 0);
    if (losing.length > 0 && flags.allowEvict !== true)
      throw new InvalidInputError(
        `--allow-evict: ${losing.map(describeLoss).join('; ')}. Nothing was moved. Raise the queue's retention (store.registerQueue(queue, { maxAgeMs, maxCount })) and run again, or pass --allow-evict to move them and let retention drop those records`,
      );
    const reports: LegacyMoveReport[] = [];
    for (const queue of queues) {
      const from = open(queue);
      try {
        reports.push(await moveLegacyDeadLetters({ from, queue, store: target }));
      } finally {
        await from.close();
      }
    }
    return reports;
  } finally {
    redis.disconnect();
  }
}

/** "index-dlq: queue "index" would lose 3 record(s) to retention (3 past maxAgeMs 30d, 0 beyond maxCount)". */
function describeLoss(preview: LegacyMovePreview): string {
  const { retention, wouldEvict } = preview;
  const age =
    retention.maxAgeMs === undefined ? 'maxAgeMs' : `maxAgeMs ${formatDuration(retention.maxAgeMs)}`;
  const count = retention.maxCount === undefined ? 'maxCount' : `maxCount ${retention.maxCount}`;
  return `moving ${preview.from} (${preview.records} record(s)) would let the retention of queue "${preview.queue}" drop ${wouldEvict.total} record(s): ${wouldEvict.pastMaxAge} dead-lettered more than ${age} ago (dropped by the next filing), ${wouldEvict.overMaxCount} beyond ${count}`;
}

function describe(
  schema: MigrationReport | undefined,
  moved: LegacyMoveReport[],
  allowEvict: boolean,
): string {
  const lines: string[] = [];
  if (schema) {
    const names = new Map(migrations().map((m) => [m.version, m.file]));
    const functions =
      schema.functions.length === 0 ? '' : `; applied functions ${schema.functions.join(', ')}`;
    lines.push(
      schema.applied.length > 0
        ? `schema "${schema.schema}": applied ${schema.applied.map((v) => names.get(v) ?? v).join(', ')}; now at version ${schema.current}${functions}`
        : functions !== ''
          ? `schema "${schema.schema}" is at version ${schema.current}${functions}`
          : `schema "${schema.schema}" is up to date at version ${schema.current}`,
    );
  }
  for (const m of moved) {
    lines.push(
      `${m.from}: moved ${m.moved} record(s) into the dead-letter store of queue "${m.queue}"` +
        (m.alreadyFiled > 0 ? ` (${m.alreadyFiled} filed by an earlier run)` : '') +
        (m.evicted
          ? `; retention evicted ${m.evicted} record(s)${allowEvict ? ' (--allow-evict)' : ''}`
          : '') +
        (m.kept.length > 0 ? `; kept ${m.kept.length} job(s) that are not records:` : ''),
    );
    for (const k of m.kept) lines.push(`  ${k.jobId}: ${k.problem}`);
  }
  return `${lines.join('\n')}\n`;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
