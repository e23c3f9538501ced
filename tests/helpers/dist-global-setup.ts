import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { buildOnce, pruneUnused } from './build-once.js';
import { ROOT } from './cli.js';
import { newestSourceMtime, staleBecause, writeBuildStamp } from './dist-freshness.js';

const run = promisify(execFile);
/** One entry per source state built, so runs started together build it once (see `buildOnce`). */
const BUILDS = join(ROOT, 'node_modules', '.cache', 'stormguard-dist-builds');
const BUILD_TIMEOUT_MS = 600_000;

/**
 * Vitest global setup: the CLI tests run `dist/cli/main.js`, so a `dist/` older than `src/` would test old
 * code. When `src/` (or the compiler settings) changed after the last build's stamp, this compiles again
 * (`tsc -p tsconfig.build.json` and the asset copy, the part of `npm run build` the CLI needs; the whole
 * `npm run build` when there is no `dist/` at all) before any test starts. A fresh `dist/` costs one walk
 * over `src/`'s mtimes.
 *
 * A compile that reports type errors still emits JavaScript; the errors are printed and the run goes on,
 * so the tests that do not need the change still run (`npm run typecheck` is where type errors fail).
 *
 * A run given test files (`vitest run tests/budget`) builds only when one of them runs the built code.
 */
export default async function setup(project: TestProject): Promise<void> {
  const why = staleBecause(ROOT);
  if (why === undefined || !(await runsBuiltCode(project))) return;
  mkdirSync(BUILDS, { recursive: true });
  pruneUnused(BUILDS, 60 * 60_000);
  const key = `src-${Math.floor(newestSourceMtime(ROOT))}`;
  await buildOnce(
    join(BUILDS, key),
    async (target) => {
      if (staleBecause(ROOT) === undefined) return; // another run built it while this one waited
      const started = Date.now();
      process.stderr.write(`dist/ is stale (${why}): building it before the tests\n`);
      await build();
      writeBuildStamp(ROOT, started);
      mkdirSync(target, { recursive: true });
    },
    BUILD_TIMEOUT_MS,
  );
}

/** What a test file that runs `dist/` mentions: the CLI helpers, the console's harness, or `dist/` itself. */
const RUNS_DIST = /helpers\/cli(-redis)?\.js|dashboard\/harness\.js|\bdist\//;

/**
 * True unless the run was given file filters and none of the test files they select runs `dist/`. The
 * filters are read from Vitest's own `filenamePattern` (set before global setups run); without it, every
 * run counts as one that may need the build.
 */
async function runsBuiltCode(project: TestProject): Promise<boolean> {
  const filters = (project.vitest as unknown as { filenamePattern?: string[] }).filenamePattern;
  if (!filters || filters.length === 0) return true;
  const { testFiles } = await project.globTestFiles(filters);
  return testFiles.some((file) => RUNS_DIST.test(readFileSync(file, 'utf8')));
}

async function build(): Promise<void> {
  const options = { cwd: ROOT, maxBuffer: 16 << 20 };
  if (!existsSync(join(ROOT, 'dist'))) {
    await run('npm', ['run', 'build'], options);
    return;
  }
  try {
    await run(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      options,
    );
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    const output = `${e.stdout ?? ''}${e.stderr ?? ''}`.trim() || e.message;
    process.stderr.write(`tsc reported errors; the tests run what it emitted:\n${output}\n`);
  }
  await run(process.execPath, [join(ROOT, 'scripts/copy-assets.mjs')], options);
}
