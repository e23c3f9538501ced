// Writes each Redis Lua script of src/redis/lua/ into dist/redis/lua/ with its `--#include` lines resolved,
// by the resolver the stores use when they run from src/ (dist/redis/lua-includes.js, so it runs after
// tsc). The includes themselves do not ship: a built script needs nothing beside it. A missing include,
// an include cycle or a malformed directive fails the build with the file and line. Run from the
// project's root (copy-assets.mjs runs it), or alone: node scripts/build-lua.mjs
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const SOURCE = 'src/redis/lua';
const TARGET = 'dist/redis/lua';

/** Resolves every script of `root`/src/redis/lua into `root`/dist/redis/lua; returns the files written. */
export async function buildLua(root = '.') {
  const { resolveLua } = await import(pathToFileURL(resolve(root, 'dist/redis/lua-includes.js')).href);
  const source = resolve(root, SOURCE);
  const target = resolve(root, TARGET);
  // Resolve all first: a failing script leaves the previous build's scripts as they were.
  const built = readdirSync(source)
    .filter((name) => name.endsWith('.lua'))
    .sort()
    .map((name) => [name, resolveLua(source, name)]);
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  for (const [name, text] of built) writeFileSync(join(target, name), text);
  return built.map(([name]) => name);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    await buildLua();
  } catch (error) {
    process.stderr.write(`build-lua: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
