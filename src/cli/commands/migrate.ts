import type { Command } from 'commander';
import type { LegacyMoveReport } from '../../bullmq/legacy-dead-letters.js';
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
 *   safe to interrupt and run again.
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
          const { PostgresDeadLetterStore } = await import('../../postgres/dead-letter-store.js');
          const store = new PostgresDeadLetterStore({
            connection: pool,
            schema: flags.schema,
            prefix: flags.prefix,
          });
          moved = await moveAll(flags, queues, store);
        });
      } else {
        moved = await moveAll(flags, queues);
      }

      if (flags.json)
        printJson(io, { ...(schema ?? {}), ...(queues.length > 0 ? { deadLetters: moved } : {}) });
      else io.stdout.write(describe(schema, moved));
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
    const [{ Queue }, { moveLegacyDeadLetters }, { RedisDeadLetterStore }] = await Promise.all([
      import('bullmq'),
      import('../../bullmq/legacy-dead-letters.js'),
      import('../../redis/dead-letter-store.js'),
    ]);
    const target = store ?? new RedisDeadLetterStore({ redis, prefix: flags.prefix });
    const reports: LegacyMoveReport[] = [];
    for (const queue of queues) {
      const from = new Queue(`${queue}-dlq`, { connection: redis as never, prefix: flags.bullPrefix });
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

function describe(schema: MigrationReport | undefined, moved: LegacyMoveReport[]): string {
  const lines: string[] = [];
  if (schema) {
    const names = new Map(migrations().map((m) => [m.version, m.file]));
    lines.push(
      schema.applied.length === 0
        ? `schema "${schema.schema}" is up to date at version ${schema.current}`
        : `schema "${schema.schema}": applied ${schema.applied.map((v) => names.get(v) ?? v).join(', ')}; now at version ${schema.current}`,
    );
  }
  for (const m of moved) {
    lines.push(
      `${m.from}: moved ${m.moved} record(s) into the dead-letter store of queue "${m.queue}"` +
        (m.alreadyFiled > 0 ? ` (${m.alreadyFiled} filed by an earlier run)` : '') +
        (m.kept.length > 0 ? `; kept ${m.kept.length} job(s) that are not records:` : ''),
    );
    for (const k of m.kept) lines.push(`  ${k.jobId}: ${k.problem}`);
  }
  return `${lines.join('\n')}\n`;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
