import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { BreakerSnapshot } from '../../breaker/types.js';
import type { Clock } from '../../common/clock.js';
import { parseWith } from '../../common/validation.js';
import { InvalidInputError, isInvalidInputError } from '../../errors/invalid-input-error.js';
import type { DeadLetterStore, StoredDeadLetter } from '../contracts.js';
import { isWithheldDeadLetter } from '../dead-letter-record.js';
import type { ReplayRun, ReplayRunStore } from '../replay-runs.js';
import type { WorkerEvents } from '../worker-events.js';
import type { ReplayTarget } from './replay.js';
import { type BudgetStateReader, type HealthGate, realSleep } from './replay-pacing.js';
import type { ReplayQueue } from './replay-queue.js';
import {
  cancelReplayRun,
  createReplayRun,
  isReplayRunOpen,
  listReplayRuns,
  runReplay,
  startReplayRun,
} from './replay-runs.js';

/**
 * The dead-letter reasons an outage leaves, which automatic replay may put back.
 *
 * @example
 * const reasons: AutoReplayReason[] = ['breaker-open'];
 */
export type AutoReplayReason = 'budget-exhausted' | 'breaker-open';

/**
 * The worker option `autoReplay`: put the dead letters an outage left (budget-exhausted, breaker-open)
 * back on the queue once their dependency is healthy, paced, with no operator action.
 *
 * @example
 * createWorker('index', processor, { connection, policy, deadLetters, budget, breaker,
 *   autoReplay: { runs: new RedisReplayRunStore({ redis }), ratePerSecond: 20 } });
 */
export interface AutoReplayOptions {
  /**
   * Where the fleet's replay runs live (`RedisReplayRunStore`, `PostgresReplayRunStore`): each automatic
   * replay is a run there, held by one worker at a time. Required, and shared by every worker of the queue.
   */
  runs: ReplayRunStore;
  /** Which dead letters to put back. Default: both, `['budget-exhausted', 'breaker-open']`. */
  reasons?: readonly AutoReplayReason[];
  /** At most this many jobs per second, for the whole fleet, shared among the reasons. Default 10. */
  ratePerSecond?: number;
  /** How often a worker looks for dead letters to replay, and for a run whose holder stopped, ms. Default 5 000. */
  pollMs?: number;
  /** How long a worker holds a run without a write before another takes it over, ms. Default 30 000. */
  leaseMs?: number;
  /**
   * How many times one job's lineage goes round automatically: a dead letter whose `replays` (the times
   * its lineage was replayed before) is at least this stays where it is, with an `auto-replay-skipped`
   * event, for a person to look at (`stormguard dlq replay` and the console replay it, uncapped). A whole
   * number >= 1. Default 3.
   */
  maxReplays?: number;
}

/**
 * Who automatic replay runs are by: it marks them in the run store and the console.
 *
 * @example
 * const automatic = (await runs.listRuns()).filter((r) => r.createdBy === AUTO_REPLAY_BY);
 */
export const AUTO_REPLAY_BY = 'auto-replay';
const DEFAULT_REASONS: readonly AutoReplayReason[] = ['budget-exhausted', 'breaker-open'];
const DEFAULT_MAX_REPLAYS = 3;
const PAGE = 500;
/** Records this worker has told `auto-replay-skipped` for, at most; the oldest are forgotten first. */
const MAX_TOLD = 10_000;

const OptionsSchema = z.object({
  runs: z.custom<ReplayRunStore>(
    (v) =>
      typeof v === 'object' &&
      v !== null &&
      typeof (v as ReplayRunStore).createRun === 'function' &&
      typeof (v as ReplayRunStore).updateRun === 'function',
    'must be a ReplayRunStore (RedisReplayRunStore, PostgresReplayRunStore, MemoryReplayRunStore)',
  ),
  reasons: z
    .array(z.enum(['budget-exhausted', 'breaker-open']))
    .min(1)
    .optional(),
  ratePerSecond: z.number().positive().finite().optional(),
  pollMs: z.number().int().positive().optional(),
  leaseMs: z.number().int().min(1_000).optional(),
  maxReplays: z.number().int().min(1).optional(),
});

/**
 * Validates the `autoReplay` option before the worker connects: a bad one throws an error naming the
 * field and the rule.
 */
export function checkAutoReplayOptions(options: AutoReplayOptions, canTellHealth: boolean): void {
  parseWith(OptionsSchema, options, 'createWorker: autoReplay');
  if (!canTellHealth)
    throw new InvalidInputError(
      'createWorker: autoReplay needs a budget or a breaker (one with state(), such as RetryBudget or CircuitBreaker) to tell when a dependency is healthy again',
    );
}

/** What the worker hands automatic replay. */
export interface AutoReplayContext {
  queue: string;
  store: DeadLetterStore;
  /** Opens the queue replayed jobs are added to (once, on first use). */
  jobs: () => ReplayQueue;
  events?: ReplayTarget['events'] & {
    emit(event: 'auto-replay-skipped', payload: WorkerEvents['auto-replay-skipped']): void;
  };
  /** The worker's budget and breaker, when they can be read: the gate replay waits on. */
  budget?: BudgetStateReader;
  breaker?: { state(dependency: string): Promise<BreakerSnapshot> };
  clock: Clock;
  report: (error: unknown) => void;
}

/**
 * Automatic replay inside one worker. Per reason, one run at a time for the whole fleet: a worker that
 * finds dead letters and no open automatic run of its queue creates one (a snapshot of them), started,
 * paced and waiting while each record's dependency is unhealthy; if two workers create one at once, the
 * run with the lower id goes on and the other is cancelled by its creator. Whichever worker holds the
 * run's lease runs it; the others look again every `pollMs`, and take over once a stopped holder's lease
 * lapses. A record is never moved twice (each goes through replay's claim, add and remove). Records
 * dead-lettered while a run goes are taken by the next one. A record whose lineage has gone round
 * `maxReplays` times is left out of every run, told once (`auto-replay-skipped`).
 */
export class AutoReplay {
  readonly #options: Required<Omit<AutoReplayOptions, 'reasons'>> & { reasons: readonly AutoReplayReason[] };
  readonly #context: AutoReplayContext;
  readonly #owner = randomUUID();
  readonly #stop = new AbortController();
  #loops: Promise<void>[] = [];
  /** Per reason, what a pass that found nothing under the cap saw: the count and the newest record. */
  readonly #quiet = new Map<AutoReplayReason, { count: number; newest: string | undefined }>();
  /** Records over the cap this worker has told about. */
  readonly #told = new Set<string>();

  constructor(options: AutoReplayOptions, context: AutoReplayContext) {
    checkAutoReplayOptions(options, context.budget !== undefined || context.breaker !== undefined);
    this.#options = {
      runs: options.runs,
      reasons: [...new Set(options.reasons ?? DEFAULT_REASONS)],
      ratePerSecond: options.ratePerSecond ?? 10,
      pollMs: options.pollMs ?? 5_000,
      leaseMs: options.leaseMs ?? 30_000,
      maxReplays: options.maxReplays ?? DEFAULT_MAX_REPLAYS,
    };
    this.#context = context;
  }

  /** Starts one loop per reason. */
  start(): void {
    if (this.#loops.length > 0) return;
    this.#loops = this.#options.reasons.map((reason) => this.#loop(reason));
  }

  /** Stops between two records; an open run is left for another worker to go on with. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await Promise.allSettled(this.#loops);
  }

  async #loop(reason: AutoReplayReason): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      try {
        await this.#pass(reason);
      } catch (error) {
        if (!signal.aborted) this.#context.report(error);
      }
      await realSleep(this.#options.pollMs, signal).catch(() => {});
    }
  }

  /** Runs the fleet's open automatic run of `reason` (creating one for the dead letters there are). */
  async #pass(reason: AutoReplayReason): Promise<void> {
    const { runs, leaseMs } = this.#options;
    const { queue, store, clock } = this.#context;
    const run = await this.#openRun(reason);
    if (!run) return;
    await runReplay(
      {
        store,
        runs,
        queue,
        jobs: this.#context.jobs(),
        ...(this.#context.events ? { events: this.#context.events } : {}),
      },
      run.id,
      { owner: this.#owner, leaseMs, whenHealthy: this.#gate(), signal: this.#stop.signal, clock },
    );
  }

  async #openRun(reason: AutoReplayReason): Promise<ReplayRun | undefined> {
    const { runs } = this.#options;
    const { queue, store, clock } = this.#context;
    const open = autoRuns(await listReplayRuns(runs), queue, reason);
    if (open[0]) return open[0];
    const count = await store.count(queue, { reason });
    if (count === 0 || !(await this.#anyUnderCap(reason, count))) return undefined;
    const created = await createReplayRun({ store, runs }, queue, {
      reason,
      maxReplays: this.#options.maxReplays,
      ratePerSecond: this.#options.ratePerSecond / this.#options.reasons.length,
      whenHealthy: true,
      by: AUTO_REPLAY_BY,
      why: `automatic replay of ${reason} dead letters once their dependency is healthy`,
      clock,
    });
    await startReplayRun({ runs }, created.id, { by: AUTO_REPLAY_BY, clock }).catch((error: unknown) => {
      // Another worker found it first and runs it: started already.
      if (!isInvalidInputError(error)) throw error;
    });
    const winner = autoRuns(await listReplayRuns(runs), queue, reason)[0];
    if (winner && winner.id !== created.id) {
      await cancelReplayRun({ runs }, created.id, {
        by: AUTO_REPLAY_BY,
        reason: `run ${winner.id} of another worker came first`,
      });
      return winner;
    }
    return winner;
  }

  /**
   * Whether a dead letter of `reason` is under the cap (its `replays` below `maxReplays`); tells
   * `auto-replay-skipped` once for each one over it. While the count and the newest record stay what a
   * pass that found none saw, nothing is listed again.
   */
  async #anyUnderCap(reason: AutoReplayReason, count: number): Promise<boolean> {
    const { queue, store } = this.#context;
    const newest = (await store.list(queue, { reason, limit: 1, newestFirst: true })).records[0]?.id;
    const quiet = this.#quiet.get(reason);
    if (quiet && quiet.count === count && quiet.newest === newest) return false;
    let any = false;
    let cursor: string | undefined;
    do {
      const page = await store.list(queue, { reason, limit: PAGE, ...(cursor ? { cursor } : {}) });
      for (const record of page.records) {
        // A safe-form record is never put back (its data was not kept): it does not keep runs coming.
        if (isWithheldDeadLetter(record)) continue;
        if (record.replays < this.#options.maxReplays) any = true;
        else this.#tellSkipped(record);
      }
      cursor = page.next;
    } while (cursor);
    if (any) this.#quiet.delete(reason);
    else this.#quiet.set(reason, { count, newest });
    return any;
  }

  #tellSkipped(record: StoredDeadLetter): void {
    if (this.#told.has(record.id)) return;
    this.#told.add(record.id);
    if (this.#told.size > MAX_TOLD) this.#told.delete(this.#told.values().next().value as string);
    this.#context.events?.emit('auto-replay-skipped', {
      queue: this.#context.queue,
      task: record.name,
      reason: record.reason,
      dependency: record.dependency,
      recordId: record.id,
      jobId: record.jobId,
      replays: record.replays,
      maxReplays: this.#options.maxReplays,
    });
  }

  /** Healthy: the budget is not denying retries, and the breaker is not open (half-open lets a probe by). */
  #gate(): HealthGate {
    const { budget, breaker } = this.#context;
    return {
      pollMs: Math.min(this.#options.pollMs, 1_000),
      ...(budget ? { budget } : {}),
      ...(breaker
        ? {
            isHealthy: async (dependency: string) => {
              const snapshot = await breaker.state(dependency);
              return (
                snapshot.state !== 'open' ||
                (snapshot.halfOpenAtMs !== undefined && snapshot.halfOpenAtMs <= snapshot.nowMs)
              );
            },
          }
        : {}),
    };
  }
}

/** The open automatic runs of `queue` and `reason`, oldest (lowest id) first: the first is the fleet's. */
function autoRuns(runs: readonly ReplayRun[], queue: string, reason: AutoReplayReason): ReplayRun[] {
  return runs
    .filter(
      (r) =>
        r.queue === queue &&
        r.createdBy === AUTO_REPLAY_BY &&
        r.preview.filter.reason === reason &&
        isReplayRunOpen(r),
    )
    .sort((a, b) => Number(a.id) - Number(b.id) || a.id.localeCompare(b.id));
}
