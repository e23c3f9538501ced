// Copies non-TypeScript assets (SQL, rules, dashboards, report templates) next to the compiled code, and
// writes the Redis Lua scripts there with their includes resolved (build-lua.mjs).
import { cpSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildLua } from './build-lua.mjs';

const exts = ['.lua', '.sql', '.yml', '.yaml', '.json', '.html'];
// Built by buildLua, resolved; copying them as they are would ship the includes unresolved.
const LUA = join('src', 'redis', 'lua');
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (path === LUA) continue;
    if (statSync(path).isDirectory()) walk(path);
    else if (exts.some((e) => name.endsWith(e))) cpSync(path, path.replace(/^src/, 'dist'));
  }
}
if (existsSync('src')) walk('src');
if (existsSync(LUA)) {
  try {
    await buildLua();
  } catch (error) {
    process.stderr.write(`copy-assets: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}

// The bin must be executable on a fresh clone (tsc does not set the mode).
import { chmodSync } from 'node:fs';

if (existsSync('dist/cli/main.js')) chmodSync('dist/cli/main.js', 0o755);
