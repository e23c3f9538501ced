import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;
/** Block comments and whole-line comments: doc examples name packages the code does not import. */
const COMMENTS = /\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm;

/**
 * The packages that a built module and every module it reaches through relative imports (static,
 * `export … from` and dynamic `import()`) name, by package name (`bullmq`, `@scope/pkg`); Node's
 * built-ins left out. For a `.d.ts` entry it follows the declaration files, so a type that names a
 * peer counts too.
 *
 * @example
 * packagesImportedFrom('dist/index.js'); // Set { 'zod' }
 */
export function packagesImportedFrom(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const pending = [resolve(entry)];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const [, specifier = ''] of readFileSync(file, 'utf8').replace(COMMENTS, '').matchAll(SPECIFIER)) {
      if (specifier.startsWith('.')) pending.push(moduleFile(resolve(dirname(file), specifier), file));
      else if (!specifier.startsWith('node:')) packages.add(packageName(specifier));
    }
  }
  return packages;
}

/** The file a relative specifier means: `./x.js` is `./x.d.ts` when followed from a declaration file. */
function moduleFile(path: string, from: string): string {
  const candidate = from.endsWith('.d.ts') ? path.replace(/\.js$/, '.d.ts') : path;
  if (!existsSync(candidate)) throw new Error(`${from} imports ${path}, which does not exist`);
  return candidate;
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}
