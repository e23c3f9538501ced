import type { Command } from 'commander';
import type { DeadLetterQueue } from '../../bullmq/dead-letter-queue.js';
import { parseDuration } from '../../common/duration.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import { assertPrefix, DEFAULT_PREFIX } from '../../redis/budget-keys.js';
import { openFleet } from '../fleet.js';
import { interruption } from '../interruption.js';
import { type CliIO, printJson } from '../io.js';
import { withExamples, withRedisOption } from '../options.js';

interface ServeFlags {
  redis: string;
  prefix: string;
  bullPrefix: string;
  queue?: string[];
  port: string;
  host: string;
  timeout: string;
  listInterval: string;
  json?: boolean;
}

/**
 * `stormguard metrics serve`: a Prometheus exporter for the fleet's shared state: every dependency's
 * retry budget (allowance, spent, denied, successes, ratio, floor), breaker and flow-control down mark as
 * Redis holds them, whether flow control is on, and the depth of the named queues' dead-letter queues.
 * Runs where no worker does; stops on SIGINT or SIGTERM.
 *
 * @example
 * stormguard metrics serve --redis redis://10.0.0.5:6379 --queue search-index --port 9464
 */
export function register(program: Command, io: CliIO): void {
  const metrics = program.command('metrics').description('export stormguard metrics for Prometheus');
  withExamples(withRedisOption(metrics.command('serve')), [
    'stormguard metrics serve --redis redis://10.0.0.5:6379 --queue search-index --port 9464',
  ])
    .description("serve the fleet's budgets, breakers and dead-letter depths on /metrics until stopped")
    .option('--prefix <prefix>', 'stormguard key prefix (budgets and breakers)', DEFAULT_PREFIX)
    .option('--bull-prefix <prefix>', 'BullMQ key prefix (dead-letter queues)', 'bull')
    .option('--queue <name>', 'export the dead-letter depth of this queue (repeatable)', collect)
    .option('--port <port>', 'TCP port (0: any free port)', '9464')
    .option('--host <host>', 'interface to listen on', '0.0.0.0')
    .option('--timeout <duration>', 'longest a scrape waits for Redis', '1s')
    .option('--list-interval <duration>', 'how often to look for new dependencies', '15s')
    .option('--json', 'print where it serves as JSON')
    .action(async (flags: ServeFlags) => {
      assertPrefix(flags.prefix);
      const queueNames = flags.queue ?? [];
      const port = parsePort(flags.port);
      const readTimeoutMs = parseDuration(flags.timeout, '--timeout');
      if (readTimeoutMs <= 0)
        throw new InvalidInputError('--timeout: must be longer than 0, like 500ms or 2s');
      const listIntervalMs = parseDuration(flags.listInterval, '--list-interval');
      // A Redis restart shows as degraded readings on the next scrapes, not as a dead exporter; no Redis
      // command outlives the scrape that needed it.
      const fleet = await openFleet({ kind: 'redis', url: flags.redis }, flags.prefix, {
        longRunning: true,
        commandTimeoutMs: readTimeoutMs,
        readOnly: true,
      });
      const queues: DeadLetterQueue[] = [];
      try {
        const [
          { Registry },
          { deadLetterQueue },
          { createMetrics },
          { serveMetrics },
          { readOnlyBreaker, readOnlyBudget },
        ] = await Promise.all([
          import('prom-client'),
          import('../../bullmq/dead-letter-queue.js'),
          import('../../prometheus/create-metrics.js'),
          import('../../prometheus/http.js'),
          import('../../metrics/store-views.js'),
        ]);
        const registry = new Registry();
        const exporter = createMetrics({ registry, readTimeoutMs });
        exporter.observeBudget(readOnlyBudget(fleet.budget), { listIntervalMs });
        exporter.observeBreaker(readOnlyBreaker(fleet.breaker, { listIntervalMs }));
        // The kill switch, and the down mark of every dependency the budget and breaker listings find.
        exporter.observeFlow(fleet.flow);
        // Every limited dependency's limits: in flight, the caps, Retry-After holds, operators' pauses.
        exporter.observeLimits(fleet.flow);
        for (const queue of queueNames) {
          const dlq = deadLetterQueue(queue, {
            store: fleet.deadLetters,
            // The queues' own BullMQ keys, on the fleet's Redis.
            connection: fleet.backend === 'redis' ? fleet.redis : undefined,
            prefix: flags.bullPrefix,
          });
          queues.push(dlq);
          exporter.observeDeadLetters(dlq);
        }
        const server = await serveMetrics({ port, host: flags.host, registry });
        if (flags.json)
          printJson(io, { url: server.url, port: server.port, prefix: flags.prefix, queues: queueNames });
        else
          io.stdout.write(
            `serving stormguard metrics on ${server.url} (budgets and breakers under "${flags.prefix}"${
              queueNames.length > 0 ? `, dead letters of ${queueNames.join(', ')}` : ''
            }); stop with Ctrl-C\n`,
          );
        const stop = interruption(io);
        await stop.requested();
        stop.dispose();
        await server.close();
        exporter.dispose();
      } finally {
        await Promise.allSettled(queues.map((q) => q.close()));
        await fleet.close();
      }
    });
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535)
    throw new InvalidInputError(`--port: "${text}" is not a port; use a whole number from 0 to 65535`);
  return port;
}
