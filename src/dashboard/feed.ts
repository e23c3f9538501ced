import type { ConsoleBackend } from './backend.js';
import { BudgetHistory } from './history.js';
import { type OverviewSnapshot, readOverview } from './overview.js';

/** What a live subscriber receives: the latest snapshot, or why the last read failed. */
export type FeedUpdate = { snapshot: OverviewSnapshot } | { error: string; atMs: number };

/**
 * Reads the overview every `intervalMs`, once for every browser watching (one read per interval, however
 * many are connected), and keeps the chart's history. Starts on first use; `close()` stops it.
 */
export class OverviewFeed {
  readonly history = new BudgetHistory();
  readonly #listeners = new Set<(update: FeedUpdate) => void>();
  #latest: OverviewSnapshot | undefined;
  #timer: NodeJS.Timeout | undefined;
  #reading: Promise<OverviewSnapshot> | undefined;
  #closed = false;

  constructor(
    private readonly backend: ConsoleBackend,
    private readonly intervalMs: number,
    private readonly now: () => number,
  ) {}

  /** The latest snapshot, read now if there is none yet. */
  async current(): Promise<OverviewSnapshot> {
    this.#start();
    return this.#latest ?? this.refresh();
  }

  /** Reads now (an action calls it so the page shows its effect without waiting for the next tick). */
  refresh(): Promise<OverviewSnapshot> {
    this.#reading ??= readOverview(this.backend)
      .then((snapshot) => {
        this.#latest = snapshot;
        this.history.add(snapshot);
        for (const listener of this.#listeners) listener({ snapshot });
        return snapshot;
      })
      .catch((error: unknown) => {
        const update = { error: error instanceof Error ? error.message : String(error), atMs: this.now() };
        for (const listener of this.#listeners) listener(update);
        throw error;
      })
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  subscribe(listener: (update: FeedUpdate) => void): () => void {
    this.#start();
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#listeners.clear();
  }

  #start(): void {
    if (this.#timer || this.#closed) return;
    this.#timer = setInterval(() => {
      // A failed read is reported to the subscribers; the next tick tries again.
      this.refresh().catch(() => {});
    }, this.intervalMs);
    this.#timer.unref();
  }
}
