import type { Command } from 'commander';
import type { Redis } from 'ioredis';
import type { RetryBudget } from '../../budget/retry-budget.js';
import { systemClock } from '../../common/clock.js';
import { parseDuration } from '../../common/duration.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { DeadLetterQueue } from '../../bullmq/dead-letter-queue.js';
import type { ReplayOptions, ReplayProgress } from '../../bullmq/replay.js';
import { connectRedis } from '../connect-redis.js';
import { type CliIO, printJson } from '../io.js';
import { withExamples } from '../options.js';
import { terminalProgress } from '../progress.js';
import {
  type CommonDlqOptions,
  type FilterFlags,
  parseFilterFlags,
  parseRate,
  parseWholeNumber,
  withCommonOptions,
  withFilterOptions,
} from './dlq-options.js';
import { formatList, formatRecord, formatReport } from './dlq-output.js';

type ListFlags = CommonDlqOptions & FilterFlags & { limit?: string; offset?: string };
type ReplayFlags = CommonDlqOptions &
  FilterFlags & {
    rate?: string;
    whenHealthy?: boolean;
    dryRun?: boolean;
    limit?: string;
    budgetPrefix: string;
    budgetRatio: string;
    budgetWindow: string;
    budgetFloor: string;
    pollInterval: string;
  };
type PurgeFlags = CommonDlqOptions & FilterFlags & { yes?: boolean };

/**
 * `stormguard dlq list|show|replay|purge <queue>`: read, replay and purge a queue's dead-letter queue.
 * The same functions a user calls (`deadLetterQueue(queue).list()`, `.get()`, `.replay()`, `.purge()`).
 */
export function register(program: Command, io: CliIO): void {
  const dlq = program.command('dlq').description("read, replay and purge a queue's dead-letter queue");

  // Every action parses its flags before it connects, so bad input reads the same whether Redis is up or not.
  withExamples(withFilterOptions(withCommonOptions(dlq.command('list <queue>'))), [
    'stormguard dlq list search-index --reason budget-exhausted --since 1h',
  ])
    .description('list dead-lettered jobs, oldest first')
    .option('--limit <n>', 'at most this many records', '50')
    .option('--offset <n>', 'skip this many matching records first', '0')
    .action((queue: string, flags: ListFlags) => {
      const filter = parseFilterFlags(flags);
      const limit = parseWholeNumber(flags.limit ?? '50', '--limit');
      const offset = parseWholeNumber(flags.offset ?? '0', '--offset');
      return withDlq(queue, flags, async (dlq) => {
        const [records, matched, total] = await Promise.all([
          dlq.list({ ...filter, limit, offset }),
          dlq.count(filter),
          dlq.count(),
        ]);
        if (flags.json) printJson(io, { queue, deadLetterQueue: dlq.name, total, matched, offset, records });
        else io.stdout.write(formatList(dlq.name, { records, matched, total, offset }, systemClock.now()));
      });
    });

  withExamples(withCommonOptions(dlq.command('show <queue> <id>')), [
    'stormguard dlq show search-index 4242 --json',
  ])
    .description('show one dead-lettered job by its original job id')
    .action((queue: string, id: string, flags: CommonDlqOptions) =>
      withDlq(queue, flags, async (dlq) => {
        const record = await dlq.get(id);
        if (!record) {
          io.stderr.write(`stormguard: no dead-letter record for job "${id}" in ${dlq.name}\n`);
          io.exitCode = 1;
          return;
        }
        if (flags.json) printJson(io, record);
        else io.stdout.write(formatRecord(record, systemClock.now()));
      }),
    );

  withExamples(withFilterOptions(withCommonOptions(dlq.command('replay <queue>'))), [
    'stormguard dlq replay search-index --dependency search --rate 50/s --when-healthy',
    'stormguard dlq replay search-index --since 1h --dry-run',
  ])
    .description('put dead-lettered jobs back on their queue (safe to interrupt and run again)')
    .option('--rate <rate>', 'at most this many jobs per second: 50/s, 600/m')
    .option('--when-healthy', "wait while the dependency's retry budget is denying retries")
    .option('--dry-run', 'show what would be replayed and replay nothing')
    .option('--limit <n>', 'replay at most this many jobs')
    .option('--budget-prefix <prefix>', 'retry budget key prefix (with --when-healthy)', 'stormguard')
    .option('--budget-ratio <ratio>', "the workers' budget ratio (with --when-healthy)", '0.2')
    .option('--budget-window <duration>', "the workers' budget window (with --when-healthy)", '60s')
    .option('--budget-floor <n>', "the workers' minimum allowance (with --when-healthy)", '10')
    .option('--poll-interval <duration>', 'how often to look at the budget while waiting', '1s')
    .action((queue: string, flags: ReplayFlags) => {
      const options: ReplayOptions = { ...parseFilterFlags(flags), signal: io.signal, dryRun: flags.dryRun };
      if (flags.rate !== undefined) options.ratePerSecond = parseRate(flags.rate);
      if (flags.limit !== undefined) options.limit = parseWholeNumber(flags.limit, '--limit', 1);
      const budgetSettings = flags.whenHealthy ? parseBudgetFlags(flags) : undefined;
      return withDlq(queue, flags, async (dlq, redis) => {
        const budget = budgetSettings ? await budgetReader(redis, budgetSettings) : undefined;
        if (budget && budgetSettings) options.whenHealthy = { budget, pollMs: budgetSettings.pollMs };
        const progress = await progressBar(io);
        options.onProgress = progress.update;
        try {
          const report = await dlq.replay(options);
          progress.stop();
          if (flags.json) printJson(io, report);
          else io.stdout.write(formatReport(report));
          if (report.failed.length > 0 || report.stoppedBecause) io.exitCode = 1;
        } finally {
          progress.stop();
          await budget?.close();
        }
      });
    });

  withExamples(withFilterOptions(withCommonOptions(dlq.command('purge <queue>'))), [
    'stormguard dlq purge search-index --reason permanent --yes',
  ])
    .description('delete dead-lettered jobs for good (needs --yes)')
    .option('--yes', 'really delete them')
    .action((queue: string, flags: PurgeFlags) => {
      const filter = parseFilterFlags(flags);
      return withDlq(queue, flags, async (dlq) => {
        if (!flags.yes) {
          const n = await dlq.count(filter);
          throw new InvalidInputError(
            `dlq purge: refusing to delete ${n} record(s) from ${dlq.name} without --yes (it cannot be undone)`,
          );
        }
        const purged = await dlq.purge(filter);
        if (flags.json) printJson(io, { queue, deadLetterQueue: dlq.name, purged });
        else io.stdout.write(`purged ${purged} record(s) from ${dlq.name}\n`);
      });
    });
}

/** Opens Redis and the dead-letter queue, runs `work`, and closes both whatever happens. */
async function withDlq(
  queue: string,
  flags: CommonDlqOptions,
  work: (dlq: DeadLetterQueue, redis: Redis) => Promise<void>,
): Promise<void> {
  if (!queue || queue.includes(':'))
    throw new InvalidInputError(`<queue>: "${queue}" is not a BullMQ queue name (non-empty, no ':')`);
  const redis = await connectRedis(flags.redis);
  const { deadLetterQueue } = await import('../../bullmq/dead-letter-queue.js');
  const dlq = deadLetterQueue(queue, { connection: redis, prefix: flags.prefix, name: flags.dlq });
  try {
    await work(dlq, redis);
  } finally {
    await dlq.close().catch(() => {});
    redis.disconnect();
  }
}

interface BudgetSettings {
  prefix: string;
  ratio: number;
  windowMs: number;
  minAllowance: number;
  pollMs: number;
}

/** The `--budget-*` flags, checked. They must match the workers' budget for its state to mean anything. */
function parseBudgetFlags(flags: ReplayFlags): BudgetSettings {
  const ratio = Number(flags.budgetRatio);
  if (!(ratio > 0 && ratio <= 1))
    throw new InvalidInputError(
      `--budget-ratio: "${flags.budgetRatio}" must be a number in (0, 1], e.g. 0.2`,
    );
  return {
    prefix: flags.budgetPrefix,
    ratio,
    windowMs: parseDuration(flags.budgetWindow, '--budget-window'),
    minAllowance: parseWholeNumber(flags.budgetFloor, '--budget-floor'),
    pollMs: Math.max(1, parseDuration(flags.pollInterval, '--poll-interval')),
  };
}

/** A read-only view of the workers' retry budget, for `--when-healthy`. */
async function budgetReader(redis: Redis, settings: BudgetSettings): Promise<RetryBudget> {
  const [{ RetryBudget }, { RedisBudgetStore }] = await Promise.all([
    import('../../budget/retry-budget.js'),
    import('../../redis/budget-store.js'),
  ]);
  return new RetryBudget({
    store: new RedisBudgetStore({ redis, prefix: settings.prefix }),
    ratio: settings.ratio,
    windowMs: settings.windowMs,
    minAllowance: settings.minAllowance,
  });
}

/** Without a terminal: one line on stderr each time the replay starts waiting for a dependency (for logs). */
function waitingNotices(io: CliIO): { update: (p: ReplayProgress) => void; stop: () => void } {
  let waitingFor: string | undefined;
  return {
    update: (p) => {
      if (p.waitingFor && p.waitingFor !== waitingFor)
        io.stderr.write(`stormguard: waiting for ${p.waitingFor}: its retry budget is denying retries\n`);
      waitingFor = p.waitingFor;
    },
    stop: () => {},
  };
}

/** A progress bar on stderr when it is a terminal; otherwise only the waiting notices. */
async function progressBar(io: CliIO): Promise<{ update: (p: ReplayProgress) => void; stop: () => void }> {
  const bar = await terminalProgress(io, {
    format: 'replay |{bar}| {value}/{total}  moved {moved}  failed {failed}  {status}',
  });
  if (!bar) return waitingNotices(io);
  return {
    update: (p) =>
      bar.update(p.total, p.moved + p.skipped + p.failed, {
        moved: p.moved,
        failed: p.failed,
        status: p.waitingFor ? `waiting for ${p.waitingFor}` : '',
      }),
    stop: bar.stop,
  };
}
