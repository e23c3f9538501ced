import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { type CliResult, cli, ensureCliBuilt } from './cli.js';
import { TestRedis } from './redis-server.js';

/** A redis-server shared by one CLI test file, and the CLI pointed at it. */
export interface CliRedisBed {
  /** The server (started in `beforeAll`, closed in `afterAll`). */
  readonly server: TestRedis;
  /** Runs `group command --redis <server url> ...args` with the built CLI. */
  cli(group: string, command: string, ...args: string[]): Promise<CliResult>;
}

/**
 * Registers `beforeAll`/`afterAll` hooks that build the CLI if needed, start a redis-server, hand `seed` a
 * client to fill it, and close the server after the file's last test.
 *
 * @example
 * const bed = cliRedisBed('budget', async (redis) => { ... });
 * const { code } = await bed.cli('budget', 'status', '--prefix', 'cli');
 */
export function cliRedisBed(command: string, seed: (redis: Redis) => Promise<void>): CliRedisBed {
  let server: TestRedis | undefined;
  beforeAll(async () => {
    await ensureCliBuilt(command);
    server = await TestRedis.start();
    const redis = new Redis(server.connection);
    try {
      await seed(redis);
    } finally {
      await redis.quit();
    }
  });
  afterAll(async () => {
    await server?.close();
  });
  const bed: CliRedisBed = {
    get server(): TestRedis {
      if (!server) throw new Error('the CLI test redis-server is not started yet: use it inside a test');
      return server;
    },
    cli: (group, sub, ...args) => cli(group, sub, '--redis', bed.server.url, ...args),
  };
  return bed;
}
