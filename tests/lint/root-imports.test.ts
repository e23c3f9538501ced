/**
 * What `import 'stormguard'` loads, read from the sources: src/index.ts and every module it reaches through
 * relative imports (static, `export … from`, dynamic `import()` and type-only), by package name. Reading
 * the sources needs no build, so the check cannot pass on a stale dist/.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;
const COMMENTS = /\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm;

/** Every package a source module and the modules it reaches name, with the modules reached. */
function sourceGraph(entry: string): { packages: Set<string>; modules: Set<string> } {
  const packages = new Set<string>();
  const modules = new Set<string>();
  const pending = [resolve(entry)];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (modules.has(file)) continue;
    modules.add(file);
    for (const [, specifier = ''] of readFileSync(file, 'utf8').replace(COMMENTS, '').matchAll(SPECIFIER)) {
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
        if (!existsSync(target)) throw new Error(`${file} imports ${specifier}, which does not exist`);
        pending.push(target);
      } else if (!specifier.startsWith('node:')) {
        const parts = specifier.split('/');
        packages.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier));
      }
    }
  }
  return { packages, modules };
}

describe('the root entry point', () => {
  const { packages, modules } = sourceGraph(join(ROOT, 'src/index.ts'));

  it('loads no YAML parser: config files are read through stormguard/config', () => {
    expect(packages.has('yaml')).toBe(false);
    expect([...modules].filter((file) => file.includes(`${join('src', 'config')}/`))).toEqual([]);
  });

  it('stormguard/config does load it, so the check above looks where yaml would be', () => {
    expect(sourceGraph(join(ROOT, 'src/config/index.ts')).packages.has('yaml')).toBe(true);
  });
});
