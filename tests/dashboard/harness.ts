import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { buildOnce } from '../helpers/build-once.js';
import { launchChromium as launchBrowser } from '../helpers/chromium.js';
import { spawnCli } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Builds the package (the CLI and the console's front end) when `dist` lacks them: `npm test` builds
 * first; this covers a lone run of one test file.
 */
export async function ensureConsoleBuilt(): Promise<void> {
  if (
    existsSync(`${ROOT}dist/dashboard/web/console.js`) &&
    existsSync(`${ROOT}dist/cli/commands/dashboard.js`)
  )
    return;
  await buildOnce(
    `${ROOT}artifacts/console-build`,
    async () => {
      await promisify(execFile)('npm', ['run', 'build'], { cwd: ROOT, maxBuffer: 16 << 20 });
    },
    180_000,
  );
}

/** Headless Chromium; a missing browser fails the test (the console is only known to work if it ran). */
export function launchChromium(): Promise<Browser> {
  return launchBrowser('to test the console');
}

/** A child process that printed a line matching `ready` on stdout; rejects if it exits first. */
function started(child: ChildProcess, ready: RegExp, what: string, timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(
      () => reject(new Error(`${what} did not start in ${timeoutMs} ms: ${err}`)),
      timeoutMs,
    );
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => ready.test(l));
      if (line) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code} before it was ready: ${err}`));
    });
  });
}

/** A running process the test stops (SIGTERM, or SIGKILL to simulate a crash). */
export interface Running {
  child: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

function running(child: ChildProcess): Running {
  return {
    child,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    },
  };
}

/** A worker process of the fixture fleet (see fixtures/worker.ts). */
export async function startWorker(redisPort: number, queue: string, prefix: string): Promise<Running> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(new URL('fixtures/worker.ts', import.meta.url)),
      String(redisPort),
      queue,
      prefix,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await started(child, /^ready$/, 'the worker');
  return running(child);
}

/**
 * `stormguard dashboard` as a user runs it, on a free port; resolves with its URL, its port and what it
 * wrote on stderr so far. STORMGUARD_DASHBOARD_TOKEN is only set when `env` sets it.
 */
export async function startConsole(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<Running & { url: string; port: number; stderr(): string }> {
  const { STORMGUARD_DASHBOARD_TOKEN: _ignored, ...inherited } = process.env;
  const child = spawnCli(['dashboard', '--port', '0', '--json', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...inherited, ...env },
  });
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const line = await started(child, /^\{/, 'the console');
  const { url, port } = JSON.parse(line) as { url: string; port: number };
  return { ...running(child), url, port, stderr: () => err };
}
