// Copies non-TypeScript assets (Lua scripts, rules, dashboards, report templates) next to the compiled code.
import { cpSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const exts = ['.lua', '.sql', '.yml', '.yaml', '.json', '.html'];
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (exts.some((e) => name.endsWith(e))) cpSync(path, path.replace(/^src/, 'dist'));
  }
}
if (existsSync('src')) walk('src');

// The bin must be executable on a fresh clone (tsc does not set the mode).
import { chmodSync } from 'node:fs';

if (existsSync('dist/cli/main.js')) chmodSync('dist/cli/main.js', 0o755);
