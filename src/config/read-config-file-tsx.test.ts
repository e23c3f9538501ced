import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

// Without tsx (as in a project that does not install it) a TypeScript config gets a clear way out.
vi.mock('tsx/esm/api', () => {
  throw new Error("Cannot find package 'tsx'");
});

const dir = mkdtempSync(join(tmpdir(), 'stormguard-tsx-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('readConfigFile without tsx', () => {
  it('explains how to load a .ts config', async () => {
    const { readConfigFile } = await import('./read-config-file.js');
    const path = join(dir, 'policies.ts');
    writeFileSync(path, 'export default { policies: {} };\n');
    await expect(readConfigFile(path)).rejects.toThrow(
      /policies.ts: loading a TypeScript config needs tsx \(npm install --save-dev tsx\); or write the config as .js, .mjs, .json or .yaml/,
    );
  });
});
