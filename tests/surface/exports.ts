/**
 * The export names of every entry point in package.json's `exports` (`stormguard`, `stormguard/redis`, …),
 * read from the sources with the TypeScript checker: values by name, type-only exports as `type Name`.
 * exports.test.ts compares them with the record in exports.json, so the public surface changes only by a
 * reviewed change to that file. After a deliberate change, record it: `npx tsx tests/surface/exports.ts`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const RECORD = join(ROOT, 'tests/surface/exports.json');

/** Each subpath of package.json's `exports` (`.`, `./redis`, …) with its source entry. */
export function entryPoints(): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, unknown>;
  };
  const entries: Record<string, string> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target === 'string') continue; // ./package.json
    entries[subpath] = join(ROOT, subpath === '.' ? 'src/index.ts' : `src/${subpath.slice(2)}/index.ts`);
  }
  return entries;
}

/** Subpath → its export names, sorted: `name` for a value (a class counts), `type Name` for a type only. */
export function surface(): Record<string, string[]> {
  const entries = entryPoints();
  const program = ts.createProgram(Object.values(entries), {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const result: Record<string, string[]> = {};
  for (const [subpath, file] of Object.entries(entries)) {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`${subpath}: no module at ${file}`);
    result[subpath] = checker
      .getExportsOfModule(module)
      .map((symbol) => {
        const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        return target.flags & ts.SymbolFlags.Value ? symbol.name : `type ${symbol.name}`;
      })
      .sort((a, b) => a.replace(/^type /, '').localeCompare(b.replace(/^type /, '')) || a.localeCompare(b));
  }
  return result;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(RECORD, `${JSON.stringify(surface(), null, 2)}\n`);
  console.log(`recorded the export names of ${Object.keys(entryPoints()).length} entry points in ${RECORD}`);
}
