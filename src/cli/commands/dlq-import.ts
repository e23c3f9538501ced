import type { Command } from 'commander';
import type { ImportProgress, ImportReport } from '../../amqp/import.js';
import { systemClock } from '../../common/clock.js';
import { assertPrefix } from '../../common/names.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import { checkAmqpUrl, connectAmqp } from '../connect-amqp.js';
import { withFleet } from '../fleet.js';
import { interruption } from '../interruption.js';
import { type CliIO, printJson } from '../io.js';
import { type BackendFlags, fleetBackend, withExamples, withFleetStateOptions } from '../options.js';
import { lineProgress, terminalProgress } from '../progress.js';
import { parseWholeNumber } from './dlq-options.js';

interface ImportFlags extends BackendFlags {
  amqp: string;
  from: string;
  queue: string;
  prefix: string;
  limit?: string;
  prefetch: string;
  json?: boolean;
}

/**
 * `stormguard dlq import --amqp URL --from <dead-letter queue> --queue <name>`: moves what RabbitMQ
 * dead-lettered into a native dead-letter queue into the dead-letter store (Redis, or PostgreSQL with
 * `--postgres`) as dead letters of `<name>`, with `importDeadLetters`, the function a user calls. Then
 * `dlq list`, `dlq replay --amqp` and the console work on them. Ctrl-C stops it cleanly: what is filed is
 * acked, the rest stays in the dead-letter queue, and running it again goes on.
 */
export function registerImport(dlq: Command, io: CliIO): void {
  withExamples(withFleetStateOptions(dlq.command('import')), [
    'stormguard dlq import --amqp amqp://guest:guest@127.0.0.1:5672/ --from orders.dlx --queue orders',
    'stormguard dlq import --amqp amqp://guest:guest@127.0.0.1:5672/ --from orders.dlx --queue orders --limit 1000 --json',
  ])
    .description(
      "move what RabbitMQ dead-lettered into a native dead-letter queue into stormguard's dead letters (safe to interrupt and run again)",
    )
    .requiredOption('--amqp <url>', 'the RabbitMQ broker: amqp://user:password@host:5672/vhost')
    .requiredOption(
      '--from <queue>',
      'the dead-letter queue to empty (the queue bound to the dead-letter exchange)',
    )
    .requiredOption('--queue <name>', 'the work queue the records are filed under, and replayed to')
    .option('--limit <n>', 'import at most this many messages')
    .option('--prefetch <n>', 'messages in hand at once, taken and not yet filed', '100')
    .action((flags: ImportFlags, command: Command) => {
      checkAmqpUrl(flags.amqp, '--amqp');
      for (const flag of ['from', 'queue'] as const)
        if (flags[flag].length > 255)
          throw new InvalidInputError(`--${flag}: a queue name has at most 255 characters`);
      const limit = flags.limit === undefined ? undefined : parseWholeNumber(flags.limit, '--limit', 1);
      const prefetch = parseWholeNumber(flags.prefetch, '--prefetch', 1);
      if (prefetch > 65_535) throw new InvalidInputError(`--prefetch: "${flags.prefetch}" is above 65535`);
      assertPrefix(flags.prefix);
      const target = fleetBackend(flags, command);
      return withFleet(target, flags.prefix, async (fleet) => {
        const { importDeadLetters } = await import('../../amqp/import.js');
        const connection = await connectAmqp(flags.amqp);
        const stop = interruption(io);
        const progress = await progressOf(io);
        try {
          const report = await importDeadLetters({
            connection,
            from: flags.from,
            queue: flags.queue,
            store: fleet.deadLetters,
            prefetch,
            ...(limit === undefined ? {} : { limit }),
            signal: stop.signal,
            onProgress: progress.update,
          });
          progress.stop();
          if (flags.json) printJson(io, report);
          else io.stdout.write(formatImport(report));
          // Interrupted: work is left in the dead-letter queue.
          if (report.stoppedBecause === 'aborted') io.exitCode = 1;
        } finally {
          progress.stop();
          stop.dispose();
          await connection.close().catch(() => {});
        }
      });
    });
}

/** A progress bar on a terminal; elsewhere a line every 10 s at most (a short import prints none). */
async function progressOf(io: CliIO): Promise<{ update: (p: ImportProgress) => void; stop: () => void }> {
  const bar = await terminalProgress(io, {
    format: 'import |{bar}| {value}/{total}  {rate}/s  {duplicates} filed before',
  });
  if (bar)
    return {
      update: (p) => bar.update(p.total, p.handled, { rate: p.ratePerSecond, duplicates: p.duplicates }),
      stop: bar.stop,
    };
  const line = lineProgress(io, systemClock);
  return {
    update: (p) => line(`importing: ${p.handled} of about ${p.total} messages, ${p.ratePerSecond}/s`),
    stop: () => {},
  };
}

/** The human report of an import. */
export function formatImport(report: ImportReport): string {
  const lines = [
    `imported ${report.imported} message(s) from "${report.from}" as dead letters of "${report.queue}" in ${(report.elapsedMs / 1000).toFixed(1)} s (${report.ratePerSecond}/s)`,
  ];
  if (report.duplicates > 0)
    lines.push(
      `${report.duplicates} message(s) had been filed by an earlier, interrupted import: acked, not filed again`,
    );
  const why = {
    drained: `"${report.from}" is empty`,
    limit: `stopped at --limit; at least ${report.left} message(s) left in "${report.from}"`,
    aborted: `interrupted; at least ${report.left} message(s) left in "${report.from}": run it again to go on (exit 1)`,
  }[report.stoppedBecause];
  lines.push(why);
  if (report.imported + report.duplicates > 0)
    lines.push(`replay them with: stormguard dlq replay ${report.queue} --amqp <url> --rate 50/s`);
  return `${lines.join('\n')}\n`;
}
