import type { Command } from 'commander';
import { DEFAULT_PREFIX } from '../redis/budget-keys.js';

/** Where commands look for Redis unless `--redis` says otherwise. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * Adds `--redis <url>` (default redis://127.0.0.1:6379) to a command.
 *
 * @example
 * withRedisOption(program.command('metrics serve'));
 */
export function withRedisOption(command: Command): Command {
  return command.option('--redis <url>', 'Redis URL', DEFAULT_REDIS_URL);
}

/**
 * Adds `--redis`, `--prefix` (the stormguard key prefix, default "stormguard") and `--json` to a command
 * that reads the fleet's shared state.
 *
 * @example
 * withFleetStateOptions(breaker.command('status'));
 */
export function withFleetStateOptions(command: Command, jsonHelp = 'print JSON'): Command {
  return withRedisOption(command)
    .option('--prefix <prefix>', 'stormguard key prefix', DEFAULT_PREFIX)
    .option('--json', jsonHelp);
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
