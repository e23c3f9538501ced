import { type ChildProcess, execFile, type SpawnOptions, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The repository root; the CLI runs from here, so relative fixture paths resolve as in a shell. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The built CLI entry point. */
export const CLI_BIN = `${ROOT}dist/cli/main.js`;

/** What a CLI run ended with. */
export interface CliResult {
  /** The exit code (1 when the process was killed by a signal). */
  code: number;
  stdout: string;
  stderr: string;
}

const run = promisify(execFile);

/**
 * Runs the built CLI as a user would (`node dist/cli/main.js ...args`) and waits for it to exit. Never
 * throws: a non-zero exit is in `code`.
 *
 * @example
 * const { code, stdout } = await cli('plan', '--window', '15m', '--json');
 */
export async function cli(...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI_BIN, ...args], {
      cwd: ROOT,
      maxBuffer: 16 << 20,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string | null; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/**
 * Starts the built CLI without waiting, for commands that run until stopped (watch, serve, replay).
 * The caller ends it.
 *
 * @example
 * const child = spawnCli(['budget', 'watch', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
 */
export function spawnCli(args: string[], options: SpawnOptions = {}): ChildProcess {
  return spawn(process.execPath, [CLI_BIN, ...args], { cwd: ROOT, ...options });
}

/**
 * Builds the CLI when `dist` lacks the given command's file (`npm test` builds first; this covers a lone
 * run of one test file). Call from `beforeAll` with a generous timeout.
 *
 * @example
 * beforeAll(() => ensureCliBuilt('plan'), 120_000);
 */
export async function ensureCliBuilt(command: string): Promise<void> {
  if (existsSync(`${ROOT}dist/cli/commands/${command}.js`)) return;
  await buildCli(ROOT);
}

/**
 * Builds the project at `root` as `npm run build` does, and rejects with the compiler's own output when
 * the build fails (a half-built CLI must never be left for the tests to run).
 *
 * @example
 * await buildCli(ROOT);
 */
export async function buildCli(root: string): Promise<void> {
  const tsc = `${ROOT}node_modules/typescript/bin/tsc`;
  try {
    await run(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, maxBuffer: 16 << 20 });
    await run(process.execPath, [`${ROOT}scripts/copy-assets.mjs`], { cwd: root });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    const output = `${e.stdout ?? ''}${e.stderr ?? ''}`.trim();
    throw new Error(`building the CLI in ${root} failed:\n${output || e.message}`);
  }
}
