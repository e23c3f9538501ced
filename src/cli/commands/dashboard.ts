import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Command } from 'commander';
import { HostGate, isLoopbackListen } from '../../dashboard/http/hosts.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import { assertPrefix, DEFAULT_PREFIX } from '../../redis/budget-keys.js';
import { checkAmqpUrl } from '../connect-amqp.js';
import { openFleet } from '../fleet.js';
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
  amqp?: string;
  host: string;
  port: string;
  token?: string;
  tokenFile?: string;
  allowedHost: string[];
  basePath: string;
  json?: boolean;
}

/**
 * `stormguard dashboard`: serves the operator console (overview, breakers, dead letters, bulk replay,
 * audit log) over the fleet's Redis or PostgreSQL state until stopped. Read-only unless given a token
 * (`STORMGUARD_DASHBOARD_TOKEN` or `--token-file`); with one, reading needs it too (signing in once). It
 * answers only for the loopback names and the `--allowed-host` names.
 *
 * @example
 * STORMGUARD_DASHBOARD_TOKEN=s3cret stormguard dashboard --redis redis://10.0.0.5:6379 --port 7600
 */
export function register(program: Command, io: CliIO): void {
  withExamples(withPostgresOption(withRedisOption(program.command('dashboard'))), [
    'stormguard dashboard --redis redis://10.0.0.5:6379',
    'STORMGUARD_DASHBOARD_TOKEN=s3cret stormguard dashboard --port 7600',
    'stormguard dashboard --token-file /run/secrets/console --host 0.0.0.0 --allowed-host console.example.com',
    'stormguard dashboard --postgres postgres://app@db:5432/shop --schema stormguard',
  ])
    .description('serve the operator console: budgets, breakers, dead letters, bulk replay, audit log')
    .option('--prefix <prefix>', 'stormguard key prefix', DEFAULT_PREFIX)
    .option('--bull-prefix <prefix>', 'BullMQ key prefix of the queues replayed jobs go back to', 'bull')
    .option(
      '--amqp <url>',
      'RabbitMQ, for dead letters a RabbitMQ consumer filed: replays put them back there (amqp://user:password@host:5672/vhost)',
    )
    .option('--host <host>', 'interface to listen on (127.0.0.1: this machine only)', '127.0.0.1')
    .option('--port <port>', 'TCP port (0: any free port)', '7600')
    .option('--base-path <path>', 'serve the console under this path', '')
    .option(
      '--token-file <path>',
      'read the console token from this file (or set STORMGUARD_DASHBOARD_TOKEN): reading and acting then need it; without one the console is read-only',
    )
    .option(
      '--token <token>',
      'the console token on the command line (visible in the process list: prefer STORMGUARD_DASHBOARD_TOKEN or --token-file)',
    )
    .option(
      '--allowed-host <host>',
      'a name the console answers for besides localhost, 127.0.0.1 and [::1] (repeat for more); required with a --host off loopback or behind a proxy',
      (value: string, previous: string[]) => [...previous, ...value.split(',').map((v) => v.trim())],
      [] as string[],
    )
    .option('--json', 'print where it serves as JSON')
    .action(async (flags: DashboardFlags, command: Command) => {
      assertPrefix(flags.prefix);
      const port = parsePort(flags.port);
      const token = tokenOf(flags, io);
      // Checked before connecting: a bad list is a usage error, whatever the backend.
      const hosts = new HostGate(flags.allowedHost, '--allowed-host');
      if (!isLoopbackListen(flags.host) && !hosts.configured)
        throw new InvalidInputError(
          `--host ${flags.host}: other machines reach the console there, so name what they open with --allowed-host <name> (repeatable), e.g. --allowed-host console.example.com; without it every request for another name is refused`,
        );
      if (flags.amqp !== undefined) checkAmqpUrl(flags.amqp, '--amqp');
      const target = fleetBackend(flags, command);
      const { createDashboard } = await import('../../dashboard/handler.js');
      // The console runs until stopped: Redis reconnects after a drop, and PostgreSQL is not asked
      // first (an unreachable one shows as errors on the page).
      const fleet = await openFleet(target, flags.prefix, { longRunning: true, lazy: true });
      let handler: import('../../dashboard/handler.js').DashboardHandler;
      try {
        handler = createDashboard({
          fleet,
          bullPrefix: flags.bullPrefix,
          ...(flags.amqp !== undefined ? { amqp: flags.amqp } : {}),
          basePath: flags.basePath,
          allowedHosts: flags.allowedHost,
          ...(token !== undefined ? { token } : {}),
        });
      } catch (error) {
        await fleet.close();
        throw error;
      }
      handler.events.on('live-client-dropped', (e) =>
        io.stderr.write(
          `stormguard console: disconnected a live page at ${e.remoteAddress ?? 'an unknown address'} that stopped reading (${e.bufferedBytes} bytes waiting for it, limit ${e.limitBytes}; ${e.dropped} so far)\n`,
        ),
      );
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
              token === undefined
                ? 'read-only: start with STORMGUARD_DASHBOARD_TOKEN or --token-file to act'
                : 'sign in with the token to read and act'
            }); stop with Ctrl-C\n`,
          );
        const stop = interruption(io);
        await stop.requested();
        stop.dispose();
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await handler.close();
        await fleet.close();
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

/**
 * The console token: `--token-file`, `STORMGUARD_DASHBOARD_TOKEN`, or `--token` (which works, but every
 * user of the machine sees it in the process list, so it warns).
 */
function tokenOf(flags: DashboardFlags, io: CliIO): string | undefined {
  if (flags.token !== undefined && flags.tokenFile !== undefined)
    throw new InvalidInputError(
      '--token and --token-file: give one of them (--token-file keeps it out of the process list)',
    );
  let token: string | undefined;
  let source: string;
  if (flags.tokenFile !== undefined) {
    source = '--token-file';
    try {
      token = readFileSync(flags.tokenFile, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      throw new InvalidInputError(
        `--token-file: cannot read ${flags.tokenFile} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); give a file holding the token`,
      );
    }
  } else if (flags.token !== undefined) {
    source = '--token';
    token = flags.token;
    io.stderr.write(
      'warning: --token is visible to every user of this machine in the process list; set STORMGUARD_DASHBOARD_TOKEN or use --token-file instead\n',
    );
  } else {
    source = 'STORMGUARD_DASHBOARD_TOKEN';
    token = process.env.STORMGUARD_DASHBOARD_TOKEN || undefined;
  }
  if (token !== undefined && (token.length < 8 || /[\r\n]/.test(token)))
    throw new InvalidInputError(
      `${source}: use a token of at least 8 characters on one line (a random string)`,
    );
  return token;
}

function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535)
    throw new InvalidInputError(`--port: "${text}" is not a port; use a whole number from 0 to 65535`);
  return port;
}
