import type { Command } from 'commander';
import type { RetryBudget } from '../../budget/retry-budget.js';
import type { BudgetStore } from '../../budget/store.js';
import type { DeadLetterQueue, DeadLetterQueueOptions } from '../../bullmq/dead-letter-queue.js';
import type { QueueBackendFactory } from '../../bullmq/worker-options.js';
import { systemClock } from '../../common/clock.js';
import { parseDuration } from '../../common/duration.js';
import { assertPrefix } from '../../common/names.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { DeadLetterReason } from '../../policy/types.js';
import type { DeadLetterStore } from '../../runtime/contracts.js';
import type { ReplayOptions, ReplayProgress, ReplayReport } from '../../runtime/replay/replay.js';
import { realSleep } from '../../runtime/replay/replay-pacing.js';
import { type CliFleet, withFleet } from '../fleet.js';
import { type CliIO, printJson } from '../io.js';
import { fleetBackend, withExamples } from '../options.js';
import { terminalProgress } from '../progress.js';
import { AMQP_REPLAY_OPTION, replayingThrough } from './dlq-amqp.js';
import { registerImport } from './dlq-import.js';
import {
  type CommonDlqOptions,
  type FilterFlags,
  parseFilterFlags,
  parseRate,
  parseWholeNumber,
  withCommonOptions,
  withFilterOptions,
} from './dlq-options.js';
import { formatList, formatQueues, formatRecord, formatReport, formatRun, formatRuns } from './dlq-output.js';

type ListFlags = CommonDlqOptions & FilterFlags & { limit?: string; after?: string; newest?: boolean };
type ReplayFlags = CommonDlqOptions &
  FilterFlags & {
    rate?: string;
    whenHealthy?: boolean;
    follow?: boolean;
    dryRun?: boolean;
    limit?: string;
    budgetRatio: string;
    budgetWindow: string;
    budgetFloor: string;
    pollInterval: string;
    by?: string;
    run?: string;
  };
type PurgeFlags = CommonDlqOptions & FilterFlags & { yes?: boolean };

/**
 * `stormguard dlq list|show|replay|purge <queue>`: read, replay and purge a queue's dead letters in the
 * dead-letter store. The same functions a user calls (`deadLetterQueue(queue, { store }).list()`, `.get()`,
 * `.replay()`, `.purge()`). Reading never writes; a queue the store does not know is named as such,
 * with the queues it does know.
 */
export function register(program: Command, io: CliIO): void {
  const dlq = program.command('dlq').description("read, replay and purge a queue's dead letters");

  // Every action parses its flags before it connects, so bad input reads the same whether Redis is up or not.
  withExamples(withFilterOptions(withCommonOptions(dlq.command('list [queue]'))), [
    'stormguard dlq list',
    'stormguard dlq list search-index --reason budget-exhausted --since 1h',
  ])
    .description("list the queues with dead letters, or one queue's dead letters, oldest first")
    .option('--limit <n>', 'at most this many records', '50')
    .option('--after <cursor>', 'continue a listing where the previous page said "more"')
    .option('--newest', 'newest first')
    .action((queue: string | undefined, flags: ListFlags, command: Command) => {
      const filter = parseFilterFlags(flags);
      const limit = parseWholeNumber(flags.limit ?? '50', '--limit');
      if (queue === undefined)
        return withStore(flags, command, async ({ store }) => {
          const queues = await store.queues();
          if (flags.json) printJson(io, { queues });
          else io.stdout.write(formatQueues(queues));
        });
      return withDlq(queue, flags, command, async (dlq) => {
        const listing = { ...filter, limit, cursor: flags.after, newestFirst: flags.newest === true };
        const [page, matched, total] = await Promise.all([dlq.list(listing), dlq.count(filter), dlq.count()]);
        if (flags.json) printJson(io, { queue, total, matched, ...page });
        else
          io.stdout.write(
            formatList(
              queue,
              { ...page, matched, total, newestFirst: listing.newestFirst },
              systemClock.now(),
            ),
          );
      });
    });

  withExamples(withCommonOptions(dlq.command('show <queue> <id>')), [
    'stormguard dlq show search-index 4242 --json',
  ])
    .description('show one dead-letter record by its id (the ID column of dlq list)')
    .action((queue: string, id: string, flags: CommonDlqOptions, command: Command) => {
      if (!/^\d+$/.test(id))
        throw new InvalidInputError(
          `<id>: "${id}" is not a record id; use the ID column of \`stormguard dlq list ${queue}\``,
        );
      return withDlq(queue, flags, command, async (dlq) => {
        const record = await dlq.get(id);
        if (!record) {
          io.stderr.write(`stormguard: no dead-letter record ${id} for queue "${queue}"\n`);
          io.exitCode = 1;
          return;
        }
        if (flags.json) printJson(io, record);
        else io.stdout.write(formatRecord(record, systemClock.now()));
      });
    });

  withExamples(withFilterOptions(withCommonOptions(dlq.command('replay <queue>'))), [
    'stormguard dlq replay search-index --dependency search --rate 50/s --when-healthy',
    'stormguard dlq replay search-index --since 1h --dry-run',
  ])
    .description('put dead-lettered jobs back on their queue (safe to interrupt and run again)')
    .option('--rate <rate>', 'at most this many jobs per second: 50/s, 600/m')
    .option('--when-healthy', "wait while the dependency's retry budget is denying retries")
    .option(
      '--follow',
      'keep running until interrupted: replay records as they are filed (budget-exhausted and breaker-open unless --reason names one), each once its dependency is healthy (implies --when-healthy)',
    )
    .option('--dry-run', 'show what would be replayed and replay nothing')
    .option(...AMQP_REPLAY_OPTION)
    .option('--limit <n>', 'replay at most this many jobs')
    .option('--budget-ratio <ratio>', "the workers' budget ratio (with --when-healthy)", '0.2')
    .option('--budget-window <duration>', "the workers' budget window (with --when-healthy)", '60s')
    .option('--budget-floor <n>', "the workers' minimum allowance (with --when-healthy)", '10')
    .option('--poll-interval <duration>', 'how often to look at the budget while waiting', '1s')
    .option('--by <name>', 'who replays, for the audit log (default: $STORMGUARD_OPERATOR, else "anonymous")')
    .option(
      '--run <id>',
      'go on with a stored bulk replay run (one the console started, or a stopped one; see `dlq runs`), at its own rate',
    )
    .action((queue: string, flags: ReplayFlags, command: Command) => {
      if (flags.run !== undefined) return replayStoredRun(io, queue, flags, command);
      const options: ReplayOptions = { ...parseFilterFlags(flags), signal: io.signal, dryRun: flags.dryRun };
      options.by = flags.by ?? process.env.STORMGUARD_OPERATOR ?? 'anonymous';
      if (flags.rate !== undefined) options.ratePerSecond = parseRate(flags.rate);
      if (flags.limit !== undefined) options.limit = parseWholeNumber(flags.limit, '--limit', 1);
      const budgetSettings = flags.whenHealthy || flags.follow ? parseBudgetFlags(flags) : undefined;
      return withDlq(queue, flags, command, async (dlq, backend) => {
        const budget = budgetSettings ? await budgetReader(backend.fleet.budget, budgetSettings) : undefined;
        if (budget && budgetSettings) options.whenHealthy = { budget, pollMs: budgetSettings.pollMs };
        options.audit = backend.fleet.audit;
        if (flags.follow && budgetSettings) {
          try {
            await follow(io, queue, flags, budgetSettings.pollMs, (reason) =>
              dlq.replay({ ...options, reason }),
            );
          } finally {
            await budget?.close();
          }
          return;
        }
        const progress = await progressBar(io);
        options.onProgress = progress.update;
        try {
          const report = await dlq.replay(options);
          progress.stop();
          if (flags.json) printJson(io, report);
          else io.stdout.write(formatReport(report));
          if (report.auditError !== undefined)
            io.stderr.write(
              `stormguard: the replay stands, but the audit log could not record it: ${report.auditError}\n`,
            );
          if (leftBehind(report).length > 0 || report.stoppedBecause) io.exitCode = 1;
        } finally {
          progress.stop();
          await budget?.close();
        }
      });
    });

  withExamples(withCommonOptions(dlq.command('runs [queue]')), [
    'stormguard dlq runs',
    'stormguard dlq runs search-index --json',
  ])
    .description("list the stored bulk replay runs (the console's, automatic ones), newest first")
    .action((queue: string | undefined, flags: CommonDlqOptions, command: Command) =>
      withStore(flags, command, async (backend) => {
        const { listReplayRuns } = await import('../../runtime/replay/replay-runs.js');
        const runs = (await listReplayRuns(backend.fleet.replayRuns)).filter(
          (r) => queue === undefined || r.queue === queue,
        );
        if (flags.json) printJson(io, { runs });
        else io.stdout.write(formatRuns(runs));
      }),
    );

  withExamples(withFilterOptions(withCommonOptions(dlq.command('purge <queue>'))), [
    'stormguard dlq purge search-index --reason permanent --yes',
  ])
    .description('delete dead-letter records for good (needs --yes)')
    .option('--yes', 'really delete them')
    .action((queue: string, flags: PurgeFlags, command: Command) => {
      const filter = parseFilterFlags(flags);
      return withDlq(queue, flags, command, async (dlq) => {
        if (!flags.yes) {
          const n = await dlq.count(filter);
          throw new InvalidInputError(
            `dlq purge: refusing to delete ${n} record(s) of queue "${queue}" without --yes (it cannot be undone)`,
          );
        }
        const purged = await dlq.purge(filter);
        if (flags.json) printJson(io, { queue, purged });
        else io.stdout.write(`purged ${purged} record(s) of queue "${queue}"\n`);
      });
    });

  registerImport(dlq, io);
}

/** What a `dlq` command works with on the backend its flags name. */
interface DlqBackend {
  /** The fleet's stores: dead letters, the workers' budgets (`--when-healthy`), the audit log, replay runs. */
  fleet: CliFleet;
  /** The dead-letter store (the fleet's). */
  store: DeadLetterStore;
  /** How the facade opens the BullMQ queue replay puts jobs back on. */
  queueOptions: Pick<DeadLetterQueueOptions, 'connection' | 'backend' | 'prefix'>;
}

/**
 * Opens the fleet on the backend the flags name (Redis by default, PostgreSQL with `--postgres`), runs
 * `work`, and closes every connection whatever happens.
 */
async function withStore(
  flags: CommonDlqOptions,
  command: Command,
  work: (backend: DlqBackend) => Promise<void>,
): Promise<void> {
  assertPrefix(flags.prefix);
  const target = fleetBackend(flags, command);
  // BullMQ is asked first: a missing queue client is named before any connection is made.
  const postgresQueues = target.kind === 'postgres' ? await postgresQueueOptions(target.url) : undefined;
  await withFleet(target, flags.prefix, (fleet) =>
    work({
      fleet,
      store: fleet.deadLetters,
      queueOptions:
        fleet.backend === 'redis'
          ? { connection: fleet.redis, prefix: flags.bullPrefix }
          : (postgresQueues ?? {}),
    }),
  );
}

/**
 * How replay opens a queue on BullMQ 6's PostgreSQL backend. Without it (BullMQ 5) the dead letters can
 * still be read; replay then says what it needs.
 */
async function postgresQueueOptions(url: string): Promise<DlqBackend['queueOptions']> {
  const bullmq = (await import('bullmq')) as { createPostgresBackend?: QueueBackendFactory };
  return bullmq.createPostgresBackend ? { connection: url, backend: bullmq.createPostgresBackend } : {};
}

/**
 * Like {@link withStore}, for one queue the store must know: a mistyped queue name is bad input, named
 * with the queues that do have dead letters (never an empty listing, and never a write).
 */
function withDlq(
  queue: string,
  flags: CommonDlqOptions & { amqp?: string },
  command: Command,
  work: (dlq: DeadLetterQueue, backend: DlqBackend) => Promise<void>,
): Promise<void> {
  if (!queue)
    throw new InvalidInputError('<queue>: must not be empty; `stormguard dlq list` lists the queues');
  return withStore(flags, command, async (backend) => {
    const { store } = backend;
    if (!(await store.queue(queue))) {
      const known = (await store.queues()).map((q) => q.queue);
      throw new InvalidInputError(
        `<queue>: no dead letters are kept for queue "${queue}" under prefix "${flags.prefix}"; ${
          known.length > 0 ? `queues with dead letters: ${known.join(', ')}` : 'no queue has any yet'
        }`,
      );
    }
    const { deadLetterQueue } = await import('../../bullmq/dead-letter-queue.js');
    // Replays go through the engine that filed the records: RabbitMQ with --amqp, BullMQ otherwise.
    const dlq = await replayingThrough(
      deadLetterQueue(queue, { store, ...backend.queueOptions }),
      flags.amqp,
    );
    try {
      await work(dlq, backend);
    } finally {
      await dlq.close().catch(() => {});
    }
  });
}

interface BudgetSettings {
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
    ratio,
    windowMs: parseDuration(flags.budgetWindow, '--budget-window'),
    minAllowance: parseWholeNumber(flags.budgetFloor, '--budget-floor'),
    pollMs: Math.max(1, parseDuration(flags.pollInterval, '--poll-interval')),
  };
}

/** A read-only view of the workers' retry budget (under the same stormguard prefix), for `--when-healthy`. */
async function budgetReader(store: BudgetStore, settings: BudgetSettings): Promise<RetryBudget> {
  const { RetryBudget } = await import('../../budget/retry-budget.js');
  return new RetryBudget({
    store,
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

/** The reasons `--follow` replays when `--reason` names none: what an outage leaves, not what a bug does. */
const FOLLOWED_REASONS: readonly DeadLetterReason[] = ['budget-exhausted', 'breaker-open'];

/**
 * `dlq replay --follow`: replays, pass after pass every `pollMs`, the records of each followed reason (each
 * once its dependency is healthy, paced by `--rate`), until the signal stops it. Prints a line per pass that
 * moved something, and the totals at the end.
 */
async function follow(
  io: CliIO,
  queue: string,
  flags: ReplayFlags,
  pollMs: number,
  replay: (reason: DeadLetterReason) => Promise<ReplayReport>,
): Promise<void> {
  const reasons = flags.reason === undefined ? FOLLOWED_REASONS : [flags.reason as DeadLetterReason];
  let moved = 0;
  let failed = 0;
  // A malformed record is met again on every pass: counted once.
  const malformed = new Set<string>();
  while (!io.signal?.aborted) {
    for (const reason of reasons) {
      const report = await replay(reason);
      moved += report.moved.length;
      failed += report.failed.length;
      for (const id of leftBehind(report)) if (!report.failed.some((f) => f.id === id)) malformed.add(id);
      if (report.moved.length + report.failed.length > 0 && !flags.json)
        io.stdout.write(formatReport(report));
      if (io.signal?.aborted) break;
    }
    await realSleep(pollMs, io.signal).catch(() => {});
  }
  if (flags.json) printJson(io, { queue, follow: true, reasons, moved, failed, malformed: malformed.size });
  else
    io.stdout.write(
      `stopped following: replayed ${moved} jobs, ${failed} failed${malformed.size > 0 ? `, ${malformed.size} malformed left in the store` : ''}\n`,
    );
  if (failed > 0 || malformed.size > 0) io.exitCode = 1;
}

/**
 * The ids of the records a replay selected that stay in the dead-letter store: those that failed to move,
 * and malformed ones, which never move. Any of them makes `dlq replay` exit 1; records already gone
 * (replayed or purged meanwhile) do not.
 */
export function leftBehind(report: ReplayReport): string[] {
  return [
    ...report.failed.map((f) => f.id),
    ...report.malformed.map((m) => m.id),
    ...report.skipped.filter((s) => s.why.startsWith('malformed')).map((s) => s.id),
  ];
}

/** Flags that choose what a fresh replay moves: meaningless for a stored run, which has its snapshot. */
const FRESH_REPLAY_FLAGS = [
  'reason',
  'dependency',
  'since',
  'name',
  'rate',
  'follow',
  'dryRun',
  'limit',
] as const;

/**
 * `dlq replay <queue> --run <id>`: goes on with a stored bulk replay run from its cursor, at its own rate,
 * waiting (when it was started that way) while the budget flags' budget is denying. Exit 1 when the run
 * is held by another process, or ends with records that failed.
 */
function replayStoredRun(io: CliIO, queue: string, flags: ReplayFlags, command: Command): Promise<void> {
  const clash = FRESH_REPLAY_FLAGS.filter((f) => flags[f] !== undefined);
  if (clash.length > 0)
    throw new InvalidInputError(
      `--run: a stored run replays its own snapshot at its own rate; leave out ${clash.map((f) => `--${f.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')}`,
    );
  const id = flags.run ?? '';
  if (!/^\S{1,64}$/.test(id))
    throw new InvalidInputError(`--run: "${id}" is not a run id; \`stormguard dlq runs\` lists them`);
  const budgetSettings = parseBudgetFlags(flags);
  return withDlq(queue, flags, command, async (dlq, backend) => {
    const runs = backend.fleet.replayRuns;
    const stored = await runs.getRun(id);
    if (!stored || stored.queue !== queue)
      throw new InvalidInputError(
        `--run: no replay run ${id} for queue "${queue}"; \`stormguard dlq runs ${queue}\` lists its runs`,
      );
    const budget = stored.whenHealthy ? await budgetReader(backend.fleet.budget, budgetSettings) : undefined;
    const progress = await progressBar(io);
    const { runReplay } = await import('../../runtime/replay/replay-runs.js');
    try {
      const run = await runReplay(
        { store: backend.store, runs, queue, jobs: dlq.replayQueue(), audit: backend.fleet.audit },
        id,
        {
          ...(io.signal ? { signal: io.signal } : {}),
          ...(budget ? { whenHealthy: { budget, pollMs: budgetSettings.pollMs } } : {}),
          onProgress: (r) =>
            progress.update({
              total: r.total,
              moved: r.moved,
              skipped: r.skipped,
              failed: r.failed,
              ...(r.waitingFor ? { waitingFor: r.waitingFor } : {}),
            }),
        },
      );
      progress.stop();
      if (!run) throw new InvalidInputError(`--run: replay run ${id} is gone`);
      const heldByOther = run.status === 'running' && (run.leaseUntilMs ?? 0) > systemClock.now();
      if (flags.json) printJson(io, run);
      else io.stdout.write(formatRun(run, heldByOther));
      if (run.status !== 'done' || run.failed > 0) io.exitCode = 1;
    } finally {
      progress.stop();
      await budget?.close();
    }
  });
}
