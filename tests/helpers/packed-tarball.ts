import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildOnce, pruneUnused } from './build-once.js';
import { ROOT } from './cli.js';

const run = promisify(execFile);

/** How long a packed tarball or an installed fixture is kept after its last use (a whole run lasts under 12 minutes). */
const UNUSED_FOR_MS = 30 * 60_000;

/**
 * Where packed tarballs and installed fixture projects are kept between runs: outside the repository,
 * so nothing in a fixture can resolve a package from the repository's own node_modules.
 */
export const FIXTURE_CACHE = join(tmpdir(), 'stormguard-fixtures');

/**
 * The stormguard tarball a user would install, as `npm pack` makes it from the built `dist/`, packed
 * once and kept by content: its name carries a hash of every file the package ships, so an unchanged
 * build reuses the tarball (and every project installed from it) and a changed one packs anew. Needs a
 * build first (`npm test` builds before it runs the tests).
 *
 * @example
 * const tarball = await packedTarball(); // /tmp/stormguard-fixtures/stormguard-3f2a….tgz
 */
export async function packedTarball(): Promise<string> {
  if (!existsSync(join(ROOT, 'dist', 'index.js'))) {
    throw new Error('dist/ is missing: run `npm run build` first (npm test builds before it runs the tests)');
  }
  const tarball = join(FIXTURE_CACHE, `stormguard-${shippedContentHash()}.tgz`);
  await buildOnce(
    tarball,
    async (target) => {
      const destination = `${target}.d`;
      mkdirSync(destination, { recursive: true });
      // The build already ran; `prepare` would only build again.
      const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', destination], {
        cwd: ROOT,
      });
      const name = stdout.trim().split('\n').at(-1) ?? '';
      renameSync(join(destination, name), target);
      rmSync(destination, { recursive: true, force: true });
      // A new build makes a new tarball and new fixtures: drop the ones older builds left unused.
      pruneUnused(FIXTURE_CACHE, UNUSED_FOR_MS);
    },
    120_000,
  );
  return tarball;
}

/** A hash of package.json and every file under its `files` entries (what `npm pack` puts in). */
function shippedContentHash(): string {
  const manifest = readFileSync(join(ROOT, 'package.json'), 'utf8');
  const hash = createHash('sha256').update(manifest);
  const shipped = [...((JSON.parse(manifest) as { files?: string[] }).files ?? []), 'LICENSE'];
  for (const entry of shipped.sort()) {
    for (const file of filesUnder(join(ROOT, entry))) {
      hash.update(file.slice(ROOT.length)).update('\0').update(readFileSync(file)).update('\0');
    }
  }
  return hash.digest('hex').slice(0, 16);
}

function filesUnder(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => filesUnder(join(path, name)));
}
