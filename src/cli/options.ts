import { type Command, Option } from 'commander';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { assertSchema, DEFAULT_SCHEMA } from '../postgres/schema.js';
import { DEFAULT_PREFIX } from '../redis/budget-keys.js';

/** Where commands look for Redis unless `--redis` says otherwise. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * Adds `--redis <url>` to a command: one Redis URL, or a Redis Cluster as comma-separated node URLs (see
 * `connectRedis`). Without the flag, `REDIS_URL` from the environment, else redis://127.0.0.1:6379.
 *
 * @example
 * withRedisOption(program.command('metrics serve'));
 */
export function withRedisOption(command: Command): Command {
  return command.addOption(
    new Option(
      '--redis <url>',
      'Redis URL, or a Redis Cluster as comma-separated node URLs (redis://10.0.0.5:7000,redis://10.0.0.6:7000)',
    )
      .env('REDIS_URL')
      .default(DEFAULT_REDIS_URL),
  );
}

/**
 * Adds `--postgres <url>` (no default: PostgreSQL is used only when named) and `--schema <schema>` (the
 * schema of stormguard's tables, default "stormguard") to a command.
 *
 * @example
 * withPostgresOption(program.command('migrate'));
 */
export function withPostgresOption(command: Command): Command {
  return command
    .option('--postgres <url>', 'PostgreSQL connection string: use the PostgreSQL stores instead of Redis')
    .option(
      '--schema <schema>',
      "schema of stormguard's PostgreSQL tables (with --postgres)",
      DEFAULT_SCHEMA,
    );
}

/**
 * Adds `--redis`, `--postgres`, `--schema`, `--prefix` (the stormguard key prefix, default "stormguard")
 * and `--json` to a command that reads the fleet's shared state. {@link fleetBackend} says which to read.
 *
 * @example
 * withFleetStateOptions(breaker.command('status'));
 */
export function withFleetStateOptions(command: Command, jsonHelp = 'print JSON'): Command {
  return withPostgresOption(withRedisOption(command))
    .option('--prefix <prefix>', 'stormguard key prefix', DEFAULT_PREFIX)
    .option('--json', jsonHelp);
}

/** The flags {@link withFleetStateOptions} (or `withRedisOption` plus `withPostgresOption`) adds. */
export interface BackendFlags {
  redis: string;
  postgres?: string;
  schema: string;
}

/**
 * Where a command finds the fleet's state: Redis (the default) or PostgreSQL.
 *
 * @example
 * const backend: FleetBackend = { kind: 'postgres', url: 'postgres://db/app', schema: 'stormguard' };
 */
export type FleetBackend = { kind: 'redis'; url: string } | { kind: 'postgres'; url: string; schema: string };

/**
 * The backend a command's flags name: PostgreSQL with `--postgres`, Redis otherwise. Naming both, or
 * `--schema` without `--postgres`, is bad input (exit 2): the command would otherwise ignore one silently.
 *
 * @example
 * .action(async (flags: BackendFlags, command: Command) => {
 *   const backend = fleetBackend(flags, command);
 * });
 */
export function fleetBackend(flags: BackendFlags, command: Command): FleetBackend {
  // Given on the command line: REDIS_URL in the environment is a default, so --postgres still wins over it.
  const given = (name: string) => {
    const source = command.getOptionValueSource(name);
    return source !== undefined && source !== 'default' && source !== 'env';
  };
  if (flags.postgres === undefined) {
    if (given('schema'))
      throw new InvalidInputError(
        '--schema: applies to PostgreSQL only; add --postgres <url> or drop --schema',
      );
    return { kind: 'redis', url: flags.redis };
  }
  if (given('redis')) throw new InvalidInputError('--redis and --postgres: name one backend, not both');
  assertSchema(flags.schema);
  return { kind: 'postgres', url: flags.postgres, schema: flags.schema };
}

/**
 * Ends a command's `--help` with example invocations, one a line.
 *
 * @example
 * withExamples(program.command('plan'), ['stormguard plan --window 15m']);
 */
export function withExamples(command: Command, examples: string[]): Command {
  return command.addHelpText('after', `\nExamples:\n${examples.map((e) => `  $ ${e}`).join('\n')}\n`);
}
