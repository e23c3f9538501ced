import type { Command } from 'commander';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import { migrate, migrations } from '../../postgres/migrations.js';
import { assertSchema } from '../../postgres/schema.js';
import { withPostgres } from '../connect-postgres.js';
import { type CliIO, printJson } from '../io.js';
import { withExamples, withPostgresOption } from '../options.js';

interface MigrateFlags {
  postgres?: string;
  schema: string;
  json?: boolean;
}

/**
 * `stormguard migrate --postgres URL [--schema S]`: creates or upgrades stormguard's tables in a
 * PostgreSQL schema, the same migrations the stores run on first use (numbered, in one transaction,
 * under an advisory lock, so running it while workers start is safe). For deploys whose workers may not
 * create tables (`migrate: false` in the stores).
 *
 * @example
 * stormguard migrate --postgres postgres://admin@db:5432/shop --schema stormguard --json
 */
export function register(program: Command, io: CliIO): void {
  withExamples(withPostgresOption(program.command('migrate')), [
    'stormguard migrate --postgres postgres://admin@db:5432/shop',
    'stormguard migrate --postgres "$DATABASE_URL" --schema shop_retries --json',
  ])
    .description("create or upgrade stormguard's PostgreSQL tables in a schema (safe to run again)")
    .option('--json', 'print JSON')
    .action(async (flags: MigrateFlags) => {
      if (flags.postgres === undefined)
        throw new InvalidInputError(
          '--postgres: required; name the database, e.g. --postgres postgres://admin@db:5432/shop',
        );
      assertSchema(flags.schema);
      const report = await withPostgres(flags.postgres, (pool) => migrate(pool, flags.schema));
      const names = new Map(migrations().map((m) => [m.version, m.file]));
      if (flags.json) printJson(io, report);
      else if (report.applied.length === 0)
        io.stdout.write(`schema "${report.schema}" is up to date at version ${report.current}\n`);
      else
        io.stdout.write(
          `schema "${report.schema}": applied ${report.applied.map((v) => names.get(v) ?? v).join(', ')}; now at version ${report.current}\n`,
        );
    });
}
