// Runs every benchmark in bench/<name>/index.ts one after another (they compete for the same cores),
// passing any arguments through: `npm run bench`, `npm run bench -- --json`, `npm run bench -- sim budget`.
// An option only some scripts take goes with their names: `npm run bench -- fleet hot-key --quick`.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const names = readdirSync('bench').filter((name) => existsSync(join('bench', name, 'index.ts')));
const chosen = args.filter((a) => names.includes(a));
const passThrough = args.filter((a) => !names.includes(a));
let failed = 0;
for (const name of chosen.length > 0 ? chosen : names) {
  process.stderr.write(`\n== bench/${name} ==\n`);
  const run = spawnSync('npx', ['tsx', join('bench', name, 'index.ts'), ...passThrough], {
    stdio: 'inherit',
  });
  if (run.status !== 0) failed++;
}
process.exitCode = failed > 0 ? 1 : 0;
