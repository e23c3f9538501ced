import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/cli.js';

/**
 * The subject module with each `'../../src/<folder>/<file>.js'` replaced by the package entry a user
 * imports it from: the subpath whose `exports` entry is that folder's index (`src/bullmq` is
 * `stormguard/bullmq`, `src/metrics` is `stormguard/prometheus`), the core (`stormguard`) for the rest.
 * A name the entry does not export then fails the cell: the tests use only what users can import.
 */
export function fromPackage(source: string): string {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | { import?: string }>;
  };
  const entries = new Map<string, string>();
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    const file = typeof target === 'string' ? target : target.import;
    const folder = /^\.\/dist\/([^/]+)\/index\.js$/.exec(file ?? '')?.[1];
    if (folder !== undefined) entries.set(folder, `${manifest.name}${subpath.slice(1)}`);
  }
  return source.replace(
    /(['"])(?:\.\.\/)+src\/([^/'"]+)\/[^'"]+\.js\1/g,
    (_, quote: string, folder: string) => {
      return `${quote}${entries.get(folder) ?? manifest.name}${quote}`;
    },
  );
}

/** The files under `folder` that import the repository's sources by a relative path. */
export function sourceImports(folder: string): string[] {
  return readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .map((name) => join(folder, name))
    .filter((file) => file.endsWith('.ts') && /(['"])(?:\.\.\/)+src\//.test(readFileSync(file, 'utf8')));
}
