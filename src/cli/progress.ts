import type { Clock } from '../common/clock.js';
import { formatDuration } from '../common/duration.js';
import type { CliIO } from './io.js';

/** A progress bar that starts on its first update and may be stopped more than once. */
export interface TerminalProgress {
  update(total: number, done: number, payload: Record<string, unknown>): void;
  stop(): void;
}

/**
 * A cli-progress bar on stderr, only when stderr is a terminal (never in pipes, files or CI logs): there
 * it resolves to undefined. cli-progress is loaded only then. `format` is cli-progress's format string.
 *
 * @example
 * const bar = await terminalProgress(io, { format: 'replay |{bar}| {value}/{total}' });
 * bar?.update(40, 3, {});
 * bar?.stop();
 */
export async function terminalProgress(
  io: CliIO,
  options: { format: string; clearOnComplete?: boolean },
): Promise<TerminalProgress | undefined> {
  if (!io.stderr.isTTY) return undefined;
  const { Presets, SingleBar } = await import('cli-progress');
  const bar = new SingleBar(
    { ...options, stream: io.stderr as NodeJS.WritableStream, hideCursor: true },
    Presets.shades_classic,
  );
  let started = false;
  let stopped = false;
  return {
    update: (total, done, payload) => {
      if (stopped) return;
      if (!started) {
        bar.start(total, done, payload);
        started = true;
      } else bar.update(done, payload);
    },
    stop: () => {
      if (started && !stopped) bar.stop();
      stopped = true;
    },
  };
}

/**
 * Progress for a long run whose stderr is no terminal (a pipe, a file, a CI log): one line at most every
 * `everyMs` (default 10 s), so a short run prints nothing and a long one is never silent. The clock is
 * injected for tests.
 *
 * @example
 * const report = lineProgress(io, systemClock);
 * report(`simulating fleet-budget: 40% of about 1,000,000 jobs`);
 */
export function lineProgress(io: CliIO, clock: Clock, everyMs = 10_000): (line: string) => void {
  const startedAt = clock.now();
  let lastAt = startedAt;
  return (line) => {
    const now = clock.now();
    if (now - lastAt < everyMs) return;
    lastAt = now;
    io.stderr.write(`${line} (${formatDuration(now - startedAt)} elapsed)\n`);
  };
}
