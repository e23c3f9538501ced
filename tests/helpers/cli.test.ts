import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildCli } from './cli.js';

describe('the CLI test helper', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('fails with the compiler output when the build fails, never hiding it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'stormguard-build-'));
    writeFileSync(
      join(dir, 'tsconfig.build.json'),
      JSON.stringify({ compilerOptions: { strict: true, outDir: 'dist' }, include: ['src'] }),
    );
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'main.ts'), 'export const answer: number = "forty-two";\n');
    await expect(buildCli(dir)).rejects.toThrow(
      /building the CLI in .* failed:\n.*src\/main\.ts\(1,14\): error TS2322: Type 'string' is not assignable to type 'number'/,
    );
  });
});
