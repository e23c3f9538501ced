import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file a build leaves in `dist/`: its mtime is when the build began. */
export const BUILD_STAMP = '.build-stamp';

/** What the compiled output depends on besides `src/`. */
const BUILD_INPUTS = ['tsconfig.json', 'tsconfig.build.json', 'package.json'];

/**
 * The newest mtime (ms) among the files the build compiles or copies: `src/` without tests, conformance
 * cases and the console's front end (Vite builds that, and no test runs it from `dist/`), plus the
 * compiler settings and package.json. About a millisecond for the whole tree: cheap enough to check on
 * every test run.
 *
 * @example
 * newestSourceMtime(ROOT) > stampMtime(ROOT); // src changed since the last build
 */
export function newestSourceMtime(root: string): number {
  let newest = 0;
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (path !== join(root, 'src', 'dashboard', 'web')) walk(path);
      } else if (!entry.name.endsWith('.test.ts') && !entry.name.endsWith('.case.ts')) {
        newest = Math.max(newest, statSync(path).mtimeMs);
      }
    }
  };
  if (existsSync(join(root, 'src'))) walk(join(root, 'src'));
  for (const file of BUILD_INPUTS) {
    const path = join(root, file);
    if (existsSync(path)) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Why `dist/` must be rebuilt before tests run it, or `undefined` when it is fresh: no `dist/cli/main.js`,
 * no build stamp, or a source newer than the stamp.
 *
 * @example
 * const why = staleBecause(ROOT); // e.g. 'src/ changed after the last build'
 */
export function staleBecause(root: string): string | undefined {
  if (!existsSync(join(root, 'dist', 'cli', 'main.js'))) return 'dist/ has no built CLI';
  const stamp = join(root, 'dist', BUILD_STAMP);
  if (!existsSync(stamp)) return `dist/ has no ${BUILD_STAMP} (built by an older build)`;
  if (newestSourceMtime(root) > statSync(stamp).mtimeMs) return 'src/ changed after the last build';
  return undefined;
}

/**
 * Writes the build stamp with the time the build began (`startedAtMs`), not the time it ended: a source
 * saved while the build ran is then newer than the stamp, and the next run builds again.
 *
 * @example
 * const started = Date.now();
 * await build();
 * writeBuildStamp(ROOT, started);
 */
export function writeBuildStamp(root: string, startedAtMs: number): void {
  const stamp = join(root, 'dist', BUILD_STAMP);
  writeFileSync(stamp, `${new Date(startedAtMs).toISOString()}\n`);
  const at = new Date(startedAtMs);
  utimesSync(stamp, at, at);
}
