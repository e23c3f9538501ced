import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../../audit/types.js';
import { type Clock, systemClock } from '../../common/clock.js';
import type { DeadLetterStore } from '../contracts.js';
import type { ReplayRunStore } from '../replay-runs.js';
import { type HealthGate, realSleep, type Sleep } from './replay-pacing.js';
import type { ReplayQueue } from './replay-queue.js';
import { isReplayRunHeld, isReplayRunOpen, runReplay } from './replay-runs.js';

/**
 * Options of {@link ReplayRunner}.
 *
 * @example
 * new ReplayRunner({ store, runs, jobs: (queue) => bullmqReplayQueue(new Queue(queue, { connection })), whenHealthy: { budget } });
 */
export interface ReplayRunnerOptions {
  store: DeadLetterStore;
  runs: ReplayRunStore;
  /** The queue a run's jobs go back to, through its port (the caller opens and closes it). */
  jobs: (queue: string) => ReplayQueue;
  audit?: AuditLog;
  /** The gate runs created `whenHealthy` wait on. */
  whenHealthy?: HealthGate;
  /** This process's name in the runs it holds. Default: a random id. */
  owner?: string;
  /** How long a hold on a run lasts without a write (see `runReplay`). Default 10 s. */
  leaseMs?: number;
  /** How often {@link ReplayRunner.watch} looks for started runs nobody holds. Default 2 s. */
  pollMs?: number;
  clock?: Clock;
  sleep?: Sleep;
}

/**
 * Runs stored bulk replays in the background of a long-lived process (the console, an ops service),
 * one loop per run: `start(id)` for a run just started, and `watch()` to go on with every run that was
 * started and is neither done nor cancelled once nobody holds it, such as the runs of a process that
 * stopped or crashed. Several runners (several consoles) share the runs through the store: a run's lease
 * lets one of them run it at a time, and `runReplay` never moves a record twice.
 *
 * @example
 * const runner = new ReplayRunner({ store, runs, jobs: (queue) => queues.get(queue) });
 * runner.watch();
 * // …
 * await runner.close(); // stops between two records; another runner goes on
 */
export class ReplayRunner {
  readonly #options: ReplayRunnerOptions;
  readonly #owner: string;
  readonly #active = new Map<string, Promise<void>>();
  readonly #stop = new AbortController();
  #watching: Promise<void> | undefined;

  constructor(options: ReplayRunnerOptions) {
    this.#options = options;
    this.#owner = options.owner ?? randomUUID();
  }

  /** Runs (or goes on with) one run in the background; a run already looping here is left alone. */
  start(id: string): void {
    if (this.#active.has(id) || this.#stop.signal.aborted) return;
    const loop = this.#run(id)
      // A store that failed mid-run: the run stays held by this runner, and `watch` takes it up again.
      .catch(() => {})
      .finally(() => this.#active.delete(id));
    this.#active.set(id, loop);
  }

  /** One look at the stored runs: starts a loop for every started, open run that nobody else holds. */
  async resumeAll(): Promise<void> {
    const now = (this.#options.clock ?? systemClock).now();
    // Every started run, not only the newest listed: previews made since must not hide one.
    for (const run of await this.#options.runs.startedRuns())
      if (isReplayRunOpen(run) && !isReplayRunHeld(run, this.#owner, now)) this.start(run.id);
  }

  /** Looks for runs to go on with now and every `pollMs` until {@link close}. */
  watch(): void {
    if (this.#watching) return;
    const sleep = this.#options.sleep ?? realSleep;
    const signal = this.#stop.signal;
    this.#watching = (async () => {
      while (!signal.aborted) {
        // A store that cannot be read now is read again at the next look.
        await this.resumeAll().catch(() => {});
        await sleep(this.#options.pollMs ?? 2_000, signal).catch(() => {});
      }
    })();
  }

  /** Stops every loop between two records; their runs are left for any runner to go on with. */
  async close(): Promise<void> {
    this.#stop.abort();
    await Promise.allSettled([...this.#active.values(), this.#watching]);
  }

  async #run(id: string): Promise<void> {
    const { runs, store, audit, whenHealthy, clock, sleep } = this.#options;
    const run = await runs.getRun(id);
    if (!run) return;
    await runReplay(
      { store, runs, queue: run.queue, jobs: this.#options.jobs(run.queue), ...(audit ? { audit } : {}) },
      id,
      {
        owner: this.#owner,
        leaseMs: this.#options.leaseMs ?? 10_000,
        signal: this.#stop.signal,
        ...(whenHealthy ? { whenHealthy } : {}),
        ...(clock ? { clock } : {}),
        ...(sleep ? { sleep } : {}),
      },
    );
  }
}
