import type { BudgetSnapshot } from '../budget/types.js';
import { replayDeadLetters } from '../bullmq/replay.js';
import type { HealthGate } from '../bullmq/replay-pacing.js';
import { budgetStatusOf } from '../status/budget.js';
import type { ConsoleBackend } from './backend.js';
import type { ReplayRun } from './replay-runs.js';

/** Records replayed per step; progress is saved after each record and each step. */
const STEP = 20;

/**
 * Runs bulk replays on the server, one loop per run, saving progress as it goes, so a run goes on when
 * the browser closes and resumes when the console restarts. Every record is moved at most once even
 * when a run is resumed over records it had already handled: replay claims each record under a job id
 * derived from the record, and a record already moved is gone from the store (it is then skipped).
 */
export class ReplayRunner {
  readonly #active = new Map<string, Promise<void>>();
  readonly #stop = new AbortController();

  constructor(private readonly backend: ConsoleBackend) {}

  /** Resumes every run left `running` (by a console that stopped). */
  async resumeAll(): Promise<void> {
    if (!this.backend.runs) return;
    for (const run of await this.backend.runs.list()) if (run.state === 'running') this.start(run.id);
  }

  /** Starts (or resumes) a run's loop in the background; a run already looping here is left alone. */
  start(id: string): void {
    if (this.#active.has(id)) return;
    const loop = this.#run(id)
      .catch(async (error: unknown) => {
        const run = await this.backend.runs?.get(id);
        if (!run) return;
        run.state = 'stopped';
        run.stoppedBecause = error instanceof Error ? error.message : String(error);
        await this.backend.runs?.save(run);
      })
      .catch(() => {})
      .finally(() => this.#active.delete(id));
    this.#active.set(id, loop);
  }

  /** Stops every loop between two records (their runs stay `running`, for the next console to resume). */
  async close(): Promise<void> {
    this.#stop.abort();
    await Promise.allSettled(this.#active.values());
  }

  async #run(id: string): Promise<void> {
    const runs = this.backend.runs;
    if (!runs) return;
    const signal = this.#stop.signal;
    let run = await runs.get(id);
    while (run && run.state === 'running' && !signal.aborted) {
      const ids = await runs.ids(id, run.handled, STEP);
      if (ids.length === 0) {
        run.state = 'done';
        run.finishedAtMs = Date.now();
        delete run.waitingFor;
        await runs.save(run);
        return;
      }
      const before = {
        handled: run.handled,
        moved: run.moved,
        skipped: run.skipped,
        failed: run.failed.length,
      };
      const current: ReplayRun = run;
      // Progress saves go one after the other, so an older one never lands after a newer one.
      let saving = Promise.resolve();
      const saveProgress = () => {
        const copy = structuredClone(current);
        saving = saving.then(() => runs.save(copy)).catch(() => {});
      };
      const report = await replayDeadLetters(
        { store: this.backend.deadLetters, queue: run.queue, jobs: this.backend.replayQueue(run.queue) },
        {
          ids,
          signal,
          ...(run.ratePerSecond ? { ratePerSecond: run.ratePerSecond } : {}),
          ...(run.whenHealthy ? { whenHealthy: this.#gate() } : {}),
          onProgress: (p) => {
            current.moved = before.moved + p.moved;
            current.skipped = before.skipped + p.skipped;
            current.handled = before.handled + p.moved + p.skipped + p.failed;
            if (p.waitingFor) current.waitingFor = p.waitingFor;
            else delete current.waitingFor;
            saveProgress();
          },
        },
      );
      await saving;
      if (report.interrupted) return;
      // The step is over: its whole outcome, including records that were gone before their turn.
      run.moved = before.moved + report.moved.length;
      run.skipped = before.skipped + report.skipped.length;
      run.failed = [
        ...run.failed,
        ...report.failed,
        ...report.malformed.map((m) => ({ id: m.id, error: m.problem })),
      ];
      run.handled = before.handled + ids.length;
      delete run.waitingFor;
      if (report.stoppedBecause) {
        run.state = 'stopped';
        run.stoppedBecause = report.stoppedBecause;
        run.finishedAtMs = Date.now();
      }
      await runs.save(run);
      run = await runs.get(id);
    }
  }

  /** "When healthy": the dependency's budget is not denying, and its breaker is not open. */
  #gate(): HealthGate {
    const { status, breakers } = this.backend;
    return {
      pollMs: 500,
      budget: {
        state: async (dependency) =>
          ((status.budget ? await budgetStatusOf(status.budget, dependency) : undefined) ?? {
            allowance: 1,
            spent: 0,
            denied: 0,
          }) as BudgetSnapshot,
      },
      isHealthy: async (dependency) =>
        (await breakers.list()).find((b) => b.dependency === dependency)?.state !== 'open',
    };
  }
}
