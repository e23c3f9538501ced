import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const run = promisify(execFile);
// Inside node_modules so the fixtures resolve vitest and fast-check, and neither Biome nor vitest sees them.
const dir = join(ROOT, 'node_modules', '.cache', 'stormguard-floating-promises');

async function check(source: string): Promise<{ code: number; stderr: string }> {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `case-${Math.random().toString(36).slice(2)}.test.ts`);
  writeFileSync(file, source);
  try {
    await run(process.execPath, ['scripts/check-floating-promises.mjs', file], { cwd: ROOT });
    return { code: 0, stderr: '' };
  } catch (error) {
    const e = error as { code?: number; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stderr: e.stderr ?? '' };
  }
}

const HEADER = `import fc from 'fast-check';\nimport { expect, it } from 'vitest';\nconst later = async () => 1;\n`;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the floating-promise check of npm run lint', () => {
  it('fails on promises a test never awaits, naming each one', async () => {
    const { code, stderr } = await check(
      `${HEADER}it('x', () => {\n  fc.assert(fc.asyncProperty(fc.integer(), async () => {}));\n  expect(later()).resolves.toBe(1);\n  later();\n});\n`,
    );
    expect(code).toBe(1);
    expect(stderr).toMatch(/:5:3: a promise nobody awaits: fc\.assert\(fc\.asyncProperty/);
    expect(stderr).toMatch(/:6:3: a promise nobody awaits: expect\(later\(\)\)\.resolves\.toBe\(1\)/);
    expect(stderr).toMatch(/:7:3: a promise nobody awaits: later\(\)/);
    expect(stderr).toContain('3 floating promise(s) in tests');
  });

  it('passes awaited, returned, voided, handled and stored promises and synchronous properties', async () => {
    const { code, stderr } = await check(
      `${HEADER}let kept: Promise<number> | undefined;\nit('x', async () => {\n  await fc.assert(fc.asyncProperty(fc.integer(), async () => {}));\n  fc.assert(fc.property(fc.integer(), () => true));\n  await expect(later()).resolves.toBe(1);\n  void later();\n  later().catch(() => {});\n  kept ??= later();\n  return later();\n});\n`,
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
