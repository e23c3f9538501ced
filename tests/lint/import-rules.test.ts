/**
 * The import rules of `npm run lint` (.dependency-cruiser.cjs, run by scripts/check-imports.mjs) fail on the
 * imports design §8 forbids and pass the ones it allows: checked on a small tree laid out like src/.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const run = promisify(execFile);
// Inside node_modules so neither Biome, tsc nor vitest sees the fixture.
const base = join(ROOT, 'node_modules', '.cache', 'stormguard-import-rules');

/** Writes `files` (path under the tree → source) as a project and runs the check on its src/. */
async function check(files: Record<string, string>): Promise<{ code: number; output: string }> {
  const dir = join(base, `case-${Math.random().toString(36).slice(2)}`);
  const all: Record<string, string> = {
    'tsconfig.json': JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true },
      include: ['src'],
    }),
    ...files,
  };
  for (const [path, source] of Object.entries(all)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), source);
  }
  const args = [
    join(ROOT, 'scripts/check-imports.mjs'),
    '--config',
    join(ROOT, '.dependency-cruiser.cjs'),
    '--without-exceptions',
    'src',
  ];
  try {
    const { stdout, stderr } = await run(process.execPath, args, { cwd: dir, timeout: 60_000 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, output: (e.stdout ?? '') + (e.stderr ?? '') };
  }
}

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('the import rules of npm run lint', () => {
  it('fail on each import design §8 forbids, type-only ones included, naming rule and files', async () => {
    const { code, output } = await check({
      'src/redis/store.ts': 'export interface Store { ok: boolean }\nexport const store = 1;\n',
      'src/bullmq/worker.ts': "import type { Store } from '../redis/store.js';\nexport type W = Store;\n",
      'src/prometheus/sink.ts': "import { store } from '../redis/store.js';\nexport const s = store;\n",
      'src/bullmq/default-dead-letters.ts':
        "import { store } from '../redis/store.js';\nexport const d = store;\n",
      'src/runtime/run.ts': 'export const r = 1;\n',
      'src/policy/decide.ts': "import { r } from '../runtime/run.js';\nexport const p = r;\n",
      'src/policy/read.ts': "import { readFileSync } from 'node:fs';\nexport const read = readFileSync;\n",
      'src/sim/engine.ts': "import { store } from '../redis/store.js';\nexport const e = store;\n",
      'src/common/a.ts': "import type { B } from './b.js';\nexport type A = { b?: B };\n",
      'src/common/b.ts': "import type { A } from './a.js';\nexport type B = { a?: A };\n",
      'src/stray/thing.ts': "import { r } from '../runtime/run.js';\nexport const t = r;\n",
    });
    expect(code).toBe(1);
    const lines = output.split('\n');
    for (const expected of [
      'no-adapter-store-sink-crossing: src/bullmq/worker.ts → src/redis/store.ts',
      'no-adapter-store-sink-crossing: src/prometheus/sink.ts → src/redis/store.ts',
      'no-adapter-store-sink-crossing: src/bullmq/default-dead-letters.ts → src/redis/store.ts',
      'no-upward-from-policy: src/policy/decide.ts → src/runtime/run.ts',
      'policy-is-pure: src/policy/read.ts → fs',
      'only-composition-roots-compose: src/sim/engine.ts → src/redis/store.ts',
      'folder-not-in-layout: src/stray/thing.ts → src/runtime/run.ts',
    ]) {
      expect(lines, expected).toContain(expected);
    }
    expect(
      lines.some((line) => /^no-circular: src\/common\/[ab]\.ts → /.test(line)),
      output,
    ).toBe(true);
  });

  it('pass what design §8 allows: downward imports, breaker using audit, index.ts re-exports, composition roots', async () => {
    const { code, output } = await check({
      'src/errors/e.ts': 'export class E extends Error {}\n',
      'src/common/c.ts': "import { E } from '../errors/e.js';\nexport const c = E;\n",
      'src/audit/log.ts': "import { c } from '../common/c.js';\nexport const log = c;\n",
      'src/breaker/breaker.ts': "import { log } from '../audit/log.js';\nexport const b = log;\n",
      'src/breaker/index.ts': "export { b } from './breaker.js';\nexport { s } from '../status/s.js';\n",
      'src/status/s.ts': "import { b } from '../breaker/breaker.js';\nexport const s = b;\n",
      'src/redis/store.ts': "import { b } from '../breaker/breaker.js';\nexport const store = b;\n",
      'src/bullmq/worker.ts': "import type { E } from '../errors/e.js';\nexport type W = E;\n",
      'src/cli/main.ts':
        "import { store } from '../redis/store.js';\nimport type { W } from '../bullmq/worker.js';\nexport const m: W | typeof store = store;\n",
      'src/dashboard/server.ts': "import { store } from '../redis/store.js';\nexport const server = store;\n",
      'src/index.ts': "export { b } from './breaker/index.js';\n",
    });
    expect(output).not.toMatch(/^[a-z-]+: src\//m);
    expect(code, output).toBe(0);
  });
});
