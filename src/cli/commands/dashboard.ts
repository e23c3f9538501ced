import type { Server } from 'node:http';
import type { Command } from 'commander';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import { assertPrefix, DEFAULT_PREFIX } from '../../redis/budget-keys.js';
import { connectRedis } from '../connect-redis.js';
import { interruption } from '../interruption.js';
import type { CliIO } from '../io.js';
import {
  type BackendFlags,
  fleetBackend,
  withExamples,
  withPostgresOption,
  withRedisOption,
} from '../options.js';

interface DashboardFlags extends BackendFlags {
  prefix: string;
  bullPrefix: string;
  host: string;
  port: string;
  token?: string;
  basePath: string;
  json?: boolean;
}

/**
 * `stormguard dashboard`: serves the operator console (overview, breakers, dead letters, bulk replay,
 * audit log) over the fleet's Redis or PostgreSQL state until stopped. Read-only unless given a token.
 *
 * @example
 * STORMGUARD_DASHBOARD_TOKEN=s3cret stormguard dashboard --redis redis://10.0.0.5:6379 --port 7600
 */
export function register(program: Command, io: CliIO): void {
  withExamples(withPostgresOption(withRedisOption(program.command('dashboard'))), [
    'stormguard dashboard --redis redis://10.0.0.5:6379',
    'STORMGUARD_DASHBOARD_TOKEN=s3cret stormguard dashboard --port 7600',
    'stormguard dashboard --postgres postgres://app@db:5432/shop --schema stormguard',
  ])
    .description('serve the operator console: budgets, breakers, dead letters, bulk replay, audit log')
    .option('--prefix <prefix>', 'stormguard key prefix', DEFAULT_PREFIX)
    .option('--bull-prefix <prefix>', 'BullMQ key prefix of the queues replayed jobs go back to', 'bull')
    .option('--host <host>', 'interface to listen on (127.0.0.1: this machine only)', '127.0.0.1')
    .option('--port <port>', 'TCP port (0: any free port)', '7600')
    .option('--base-path <path>', 'serve the console under this path', '')
    .option(
      '--token <token>',
      'enable actions for requests that carry this token (env STORMGUARD_DASHBOARD_TOKEN); without one the console is read-only',
    )
    .option('--json', 'print where it serves as JSON')
    .action(async (flags: DashboardFlags, command: Command) => {
      assertPrefix(flags.prefix);
      const port = parsePort(flags.port);
      const token = flags.token ?? process.env.STORMGUARD_DASHBOARD_TOKEN;
      if (token !== undefined && token.length < 8)
        throw new InvalidInputError('--token: use at least 8 characters (a random string)');
      const target = fleetBackend(flags, command);
      const { createDashboard } = await import('../../dashboard/handler.js');
      let closeClient: () => Promise<void> | void;
      let backend: import('../../dashboard/backend.js').ConsoleBackend;
      if (target.kind === 'redis') {
        const redis = await connectRedis(target.url, { longRunning: true });
        const { redisConsoleBackend } = await import('../../dashboard/redis-backend.js');
        backend = redisConsoleBackend({ redis, prefix: flags.prefix, bullPrefix: flags.bullPrefix });
        closeClient = () => redis.disconnect();
      } else {
        const { postgresConsoleBackend } = await import('../../dashboard/postgres-backend.js');
        backend = await postgresConsoleBackend({
          connection: target.url,
          schema: target.schema,
          prefix: flags.prefix,
          queueUrl: target.url,
        });
        closeClient = () => undefined;
      }
      const handler = createDashboard({
        backend,
        basePath: flags.basePath,
        ...(token !== undefined ? { token } : {}),
      });
      const { createServer } = await import('node:http');
      const server = createServer(handler);
      try {
        await listen(server, port, flags.host);
        const address = server.address();
        const bound = typeof address === 'object' && address ? address.port : port;
        const host = flags.host.includes(':') ? `[${flags.host}]` : flags.host;
        const url = `http://${host}:${bound}${flags.basePath.replace(/\/+$/, '')}/`;
        // One line: whoever started it reads the URL from the first line.
        if (flags.json)
          io.stdout.write(`${JSON.stringify({ url, port: bound, writable: token !== undefined })}\n`);
        else
          io.stdout.write(
            `stormguard console on ${url} (${
              token === undefined ? 'read-only: start with --token to act' : 'actions need the token'
            }); stop with Ctrl-C\n`,
          );
        const stop = interruption(io);
        await stop.requested();
        stop.dispose();
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await handler.close();
        await closeClient();
      }
    });
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535)
    throw new InvalidInputError(`--port: "${text}" is not a port; use a whole number from 0 to 65535`);
  return port;
}
