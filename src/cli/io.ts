/** Where a command writes, and the exit code it sets. Injected so tests can capture output. */
export interface CliIO {
  stdout: { write(text: string): unknown; isTTY?: boolean; columns?: number };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  /** Set by a command that ends in a non-zero state (1: failure such as lint errors). */
  exitCode?: number;
  /** Aborted on SIGINT so long-running commands (watch, replay) can stop cleanly. */
  signal?: AbortSignal;
}

/** Prints `value` as indented JSON on one write. */
export function printJson(io: CliIO, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
