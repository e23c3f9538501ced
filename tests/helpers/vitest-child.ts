import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './cli.js';

/** How a nested vitest run ended. */
export interface VitestChildResult {
  /** vitest's exit code: 0 when everything passed and nothing failed outside a test. */
  code: number | null;
  /** Its stdout and stderr, interleaved. */
  output: string;
}

/**
 * Runs the repository's vitest in a child process (`vitest run ...args` in `cwd`), as a test of the
 * test setup itself or a matrix cell does. The outer run's own VITEST* variables are left out, so the
 * child starts as a run of its own; `env` adds to what is left. With `logFile`, the output also goes
 * there as it comes.
 *
 * @example
 * const { code, output } = await runVitest(['run', '--config', 'fixtures/vitest.config.ts'], { cwd: here });
 */
export async function runVitest(
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; logFile?: string },
): Promise<VitestChildResult> {
  const inherited = Object.entries(process.env).filter(
    ([name]) => !name.startsWith('VITEST') && name !== 'TEST',
  );
  const child = spawn(process.execPath, [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), ...args], {
    cwd: options.cwd,
    env: { ...Object.fromEntries(inherited), FORCE_COLOR: '0', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = options.logFile ? createWriteStream(options.logFile) : undefined;
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    log?.write(chunk);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const [code] = (await once(child, 'close')) as [number | null];
  if (log) await new Promise((resolve) => log.end(resolve));
  return { code, output };
}
