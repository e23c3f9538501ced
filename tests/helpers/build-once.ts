import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { waitFor } from './redis-server.js';

/**
 * Builds `target` (a file or folder) once for every process that asks for it, and keeps it for later
 * runs: the first caller takes a lock (`<target>.lock`, made with an atomic mkdir), builds, and marks
 * the result complete (`<target>.ready`); callers that arrive meanwhile wait for the lock, then find the
 * mark and return. A build that throws leaves no mark, so the next caller builds again; a lock whose
 * holder died (its pid is gone) is taken over. Test files run in several workers at once, and each may
 * need the same packed tarball or installed project.
 *
 * @example
 * await buildOnce(join(cache, key), (dir) => install(dir), 180_000);
 */
export async function buildOnce(
  target: string,
  build: (target: string) => Promise<void>,
  timeoutMs: number,
): Promise<void> {
  const ready = `${target}.ready`;
  if (existsSync(ready)) return;
  mkdirSync(dirname(target), { recursive: true });
  const lock = `${target}.lock`;
  await waitFor(
    () => takeLock(lock),
    timeoutMs,
    `the lock ${lock} (another test is building ${target})`,
    200,
  );
  try {
    if (existsSync(ready)) return;
    rmSync(target, { recursive: true, force: true });
    await build(target);
    writeFileSync(ready, `${new Date().toISOString()}\n`);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function takeLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    writeFileSync(`${lock}/pid`, String(process.pid));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    if (holderIsGone(lock)) rmSync(lock, { recursive: true, force: true });
    return false;
  }
}

function holderIsGone(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(`${lock}/pid`, 'utf8'));
  } catch {
    return false; // the holder has made the folder but not yet written its pid
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
