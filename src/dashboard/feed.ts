import { EventBus } from '../common/events.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { ConsoleBackend } from './backend.js';
import { BudgetHistory } from './history.js';
import { DEFAULT_LIVE_BUFFER_BYTES, type StreamOverflow } from './http/event-stream.js';
import { type OverviewSnapshot, readOverview } from './overview.js';

/** What a live subscriber receives: the latest snapshot, or why the last read failed. */
export type FeedUpdate = { snapshot: OverviewSnapshot } | { error: string; atMs: number };

/**
 * A live page the console disconnected because it stopped reading: more than `liveBufferBytes` would have
 * waited for it in the console's memory.
 *
 * @example
 * const dropped: LiveClientDropped = {
 *   bufferedBytes: 1_040_000, messageBytes: 12_400, limitBytes: 1_048_576, openForMs: 95_000,
 *   remoteAddress: '10.0.0.7', dropped: 1,
 * };
 */
export interface LiveClientDropped extends StreamOverflow {
  /** The client's address, as the console's socket saw it (a proxy's, behind one). */
  remoteAddress: string | undefined;
  /** Live clients this console disconnected so far, this one included. */
  dropped: number;
}

/**
 * The events of a console (`DashboardHandler.events`).
 *
 * @example
 * dashboard.events.on('live-client-dropped', (e) => log.warn(`live page ${e.remoteAddress} dropped: ${e.bufferedBytes} bytes waiting`));
 */
export interface DashboardEvents {
  /** A live page was disconnected because it stopped reading (see `liveBufferBytes`). */
  'live-client-dropped': LiveClientDropped;
}

/**
 * Reads the overview every `intervalMs`, once for every browser watching (one read per interval, however
 * many are connected), and keeps the chart's history. Starts on first use; `close()` stops it.
 */
export class OverviewFeed {
  readonly history = new BudgetHistory();
  /** Live clients disconnected for reading too slowly, among others. */
  readonly events = new EventBus<DashboardEvents>();
  /** What may wait in memory for one live client before it is disconnected, bytes. */
  readonly liveBufferBytes: number;
  #dropped = 0;
  readonly #listeners = new Set<(update: FeedUpdate) => void>();
  #latest: OverviewSnapshot | undefined;
  #timer: NodeJS.Timeout | undefined;
  #reading: Promise<OverviewSnapshot> | undefined;
  #closed = false;

  constructor(
    private readonly backend: ConsoleBackend,
    private readonly intervalMs: number,
    private readonly now: () => number,
    liveBufferBytes: number = DEFAULT_LIVE_BUFFER_BYTES,
  ) {
    if (typeof liveBufferBytes !== 'number' || !(liveBufferBytes > 0))
      throw new InvalidInputError(
        `dashboard: liveBufferBytes must be a number of bytes above 0 (default ${DEFAULT_LIVE_BUFFER_BYTES}, 1 MiB); got ${String(liveBufferBytes)}`,
      );
    this.liveBufferBytes = liveBufferBytes;
  }

  /** How many live clients are subscribed now. */
  get subscribers(): number {
    return this.#listeners.size;
  }

  /** Live clients disconnected so far for reading too slowly. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Counts a live client cut for reading too slowly, and tells the `live-client-dropped` listeners. */
  clientDropped(overflow: StreamOverflow, remoteAddress: string | undefined): void {
    this.#dropped += 1;
    this.events.emit('live-client-dropped', { ...overflow, remoteAddress, dropped: this.#dropped });
  }

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
