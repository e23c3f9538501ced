import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { waitFor } from './redis-server.js';

/**
 * Builds `target` (a file or folder) once for every process that asks for it, and keeps it for later
 * runs: the first caller takes a lock (`<target>.lock`, made with an atomic mkdir), builds, and marks
 * the result complete (`<target>.ready`); callers that arrive meanwhile wait for the lock, then find the
 * mark and return. A build that throws leaves no mark, so the next caller builds again; a lock whose
 * holder died (its pid is gone) is taken over. Each use touches the mark, so {@link pruneUnused} can tell
 * what no run has used for a while. Test files run in several workers at once, and each may
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
  if (markUsed(ready)) return;
  mkdirSync(dirname(target), { recursive: true });
  const lock = `${target}.lock`;
  await waitFor(
    () => takeLock(lock),
    timeoutMs,
    `the lock ${lock} (another test is building ${target})`,
    200,
  );
  try {
    if (markUsed(ready)) return;
    rmSync(target, { recursive: true, force: true });
    await build(target);
    writeFileSync(ready, `${new Date().toISOString()}\n`);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Removes what {@link buildOnce} built in `folder` that no run has used for `idleMs`, and what a build
 * that failed left there, so a cache that gets a new entry for every new build does not fill the disk.
 * Entries that are being built (locked) stay.
 *
 * @example
 * pruneUnused(FIXTURE_CACHE, 60 * 60_000);
 */
export function pruneUnused(folder: string, idleMs: number): void {
  if (!existsSync(folder)) return;
  const names = new Set(readdirSync(folder));
  const idleSince = Date.now() - idleMs;
  for (const name of names) {
    if (name.endsWith('.ready') || name.endsWith('.lock')) continue;
    const ready = `${name}.ready`;
    const lastUse = names.has(ready) ? lastModified(join(folder, ready)) : lastModified(join(folder, name));
    if (names.has(`${name}.lock`) || lastUse === undefined || lastUse > idleSince) continue;
    rmSync(join(folder, ready), { force: true });
    rmSync(join(folder, name), { recursive: true, force: true });
  }
}

function markUsed(ready: string): boolean {
  if (!existsSync(ready)) return false;
  const now = new Date();
  utimesSync(ready, now, now);
  return true;
}

function lastModified(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
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
