/**
 * What a worker's run loop does with errors it cannot process.
 *
 * BullMQ 6's run loop reports an error on fetching the next job as an 'error' event and fetches again at
 * once; only connection errors wait (`runRetryDelay`). On the PostgreSQL backend a schema BullMQ never
 * migrated (a connection without `migrate: true`) fails every fetch with `SchemaMigrationRequiredError`
 * without a round trip, so a worker logged about 48 000 errors a second and ran no job: a log storm is a
 * retry storm. Here the loop backs off instead (1 s doubling to 30 s, reset by a fetch that succeeds), and
 * an error no retry can fix (the schema missing, too new, or a server too old) ends the worker with one
 * error that says what to do. A fetch the server rolled back for a deadlock between workers (a claim that
 * promotes due delayed jobs, SQLSTATE 40P01) is fetched again at once, up to {@link CONFLICT_REFETCHES}
 * in a row, as BullMQ would, rather than pausing the worker's fetching for 1 s.
 */

import { isTransactionRollback } from '../policy/classify/database.js';

/** Fetches rolled back for a transaction conflict, in a row, that are fetched again at once. */
export const CONFLICT_REFETCHES = 3;

/** The first wait after a failed fetch. */
export const RUN_LOOP_FIRST_BACKOFF_MS = 1_000;
/** The longest wait between fetches while they keep failing. */
export const RUN_LOOP_MAX_BACKOFF_MS = 30_000;

/**
 * The wait before the next fetch after `failures` failed fetches in a row: none after a success, then
 * 1 s, 2 s, 4 s, … up to 30 s.
 *
 * @example
 * [0, 1, 2, 6, 7].map(runLoopBackoffMs); // [0, 1000, 2000, 30000, 30000]
 */
export function runLoopBackoffMs(failures: number): number {
  if (!(failures > 0)) return 0;
  return Math.min(RUN_LOOP_MAX_BACKOFF_MS, RUN_LOOP_FIRST_BACKOFF_MS * 2 ** Math.min(failures - 1, 16));
}

/** BullMQ's PostgreSQL errors that no retry fixes: the schema or the server has to change first. */
const FATAL_ERRORS: Readonly<Record<string, (queue: string, message: string) => string>> = {
  SchemaMigrationRequiredError: (queue) =>
    `worker "${queue}" closed: BullMQ's PostgreSQL schema is not migrated, so no job can be fetched. ` +
    "Pass `migrate: true` in the worker's connection (`connection: { connectionString, migrate: true }`), " +
    "or run BullMQ's migrations (`runMigrations` from bullmq) before starting workers",
  SchemaVersionMismatchError: (queue, message) =>
    `worker "${queue}" closed: ${message} (a newer BullMQ migrated the schema)`,
  UnsupportedPostgresVersionError: (queue, message) => `worker "${queue}" closed: ${message}`,
};

/**
 * The error a worker of `queue` closes with when `error` is one no retry can fix, its `cause` the
 * original; `undefined` for any other error.
 *
 * @example
 * fatalRunLoopError('index', new SchemaMigrationRequiredError('bullmq'))?.message; // 'worker "index" closed: …'
 */
export function fatalRunLoopError(queue: string, error: unknown): Error | undefined {
  const name = (error as { name?: unknown } | null)?.name;
  const explain =
    typeof name === 'string' && Object.hasOwn(FATAL_ERRORS, name) ? FATAL_ERRORS[name] : undefined;
  if (!explain) return undefined;
  const clear = new Error(explain(queue, (error as Error).message), { cause: error });
  clear.name = 'WorkerCannotRunError';
  return clear;
}

/**
 * Options of {@link RunLoopErrors}.
 *
 * @example
 * const options: RunLoopErrorsOptions = { queue: 'index', stopped, onFatal: (error) => worker.close() };
 */
export interface RunLoopErrorsOptions {
  queue: string;
  /** Settles when the worker starts closing: waits end then, and the loop sees it is closing. */
  stopped: Promise<void>;
  /** Called once, with the clear error, for the first error no retry fixes: report it and close. */
  onFatal(error: Error): void;
  /** Told of every fetch the server rolled back for a transaction conflict; `again`: fetched again at once. */
  onConflict?(error: unknown, again: boolean): void;
  /** Waits `ms`, or less when `until` settles first. Default: a timer. */
  sleep?(ms: number, until: Promise<void>): Promise<void>;
}

/**
 * One worker's run-loop error handling: {@link fetch} wraps the loop's fetch of the next job (backing
 * off while it fails), {@link absorbs} sees each 'error' event first (the fatal ones end the worker).
 *
 * @example
 * const loop = new RunLoopErrors({ queue: 'index', stopped, onFatal: (error) => report(error) });
 * const job = await loop.fetch(() => fetchNextJob());
 */
export class RunLoopErrors {
  readonly #options: RunLoopErrorsOptions;
  readonly #sleep: (ms: number, until: Promise<void>) => Promise<void>;
  #failures = 0;
  /** Fetches rolled back for a transaction conflict in a row (0 after a success). */
  #conflicts = 0;
  #fatal = false;

  constructor(options: RunLoopErrorsOptions) {
    this.#options = options;
    this.#sleep = options.sleep ?? sleepUntil;
  }

  /** Failed fetches in a row (0 after a success). */
  get failures(): number {
    return this.#failures;
  }

  /**
   * Runs one fetch, after the backoff its predecessors' failures call for. A failure is thrown on (the
   * loop reports it); an error no retry fixes ends the worker and resolves `undefined` once it closes.
   */
  async fetch<T>(fetchNext: () => Promise<T>): Promise<T | undefined> {
    if (this.#fatal) return this.#untilStopped();
    const waitMs = runLoopBackoffMs(this.#failures);
    if (waitMs > 0) await this.#sleep(waitMs, this.#options.stopped);
    try {
      const next = await fetchNext();
      this.#failures = 0;
      this.#conflicts = 0;
      return next;
    } catch (error) {
      if (this.absorbs(error)) return this.#untilStopped();
      if (isTransactionRollback(error)) {
        const again = this.#conflicts < CONFLICT_REFETCHES;
        this.#options.onConflict?.(error, again);
        if (again) {
          this.#conflicts++;
          throw error;
        }
      }
      this.#failures++;
      throw error;
    }
  }

  /**
   * True when `error` is one no retry fixes: the first becomes the worker's one clear error
   * (`onFatal`), every later one is dropped (the worker is closing). False for any other error.
   */
  absorbs(error: unknown): boolean {
    const clear = fatalRunLoopError(this.#options.queue, error);
    if (!clear) return false;
    if (!this.#fatal) {
      this.#fatal = true;
      this.#options.onFatal(clear);
    }
    return true;
  }

  async #untilStopped(): Promise<undefined> {
    await this.#options.stopped;
    return undefined;
  }
}

function sleepUntil(ms: number, until: Promise<void>): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    void until.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
