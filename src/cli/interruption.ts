import type { CliIO } from './io.js';

/** A signal that fires when the user asks a long-running command to stop; dispose() stops listening. */
export interface Interruption {
  signal: AbortSignal;
  /** Resolves once the command is asked to stop. */
  requested(): Promise<void>;
  dispose(): void;
}

/**
 * Aborts on `io.signal` (when the caller provides one) or on SIGINT/SIGTERM, whichever comes first, so
 * `budget watch` and `metrics serve` end cleanly under Ctrl-C and under a process manager alike.
 *
 * @example
 * const stop = interruption(io);
 * try { await stop.requested(); } finally { stop.dispose(); }
 */
export function interruption(io: CliIO): Interruption {
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (io.signal?.aborted) abort();
  io.signal?.addEventListener('abort', abort, { once: true });
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  const requested = new Promise<void>((resolve) => {
    if (controller.signal.aborted) resolve();
    else controller.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  return {
    signal: controller.signal,
    requested: () => requested,
    dispose: () => {
      io.signal?.removeEventListener('abort', abort);
      process.off('SIGINT', abort);
      process.off('SIGTERM', abort);
    },
  };
}
