import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { staleBecause, writeBuildStamp } from './dist-freshness.js';

const T = 1_700_000_000_000;

describe('staleBecause', () => {
  let root: string;
  const file = (path: string, mtimeMs: number) => {
    const full = join(root, path);
    mkdirSync(join(full, '..'), { recursive: true });
    writeFileSync(full, '');
    utimesSync(full, new Date(mtimeMs), new Date(mtimeMs));
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'stormguard-dist-fresh-'));
    file('src/cli/main.ts', T);
    file('tsconfig.build.json', T);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('asks for a build without a built CLI, and without a stamp', () => {
    expect(staleBecause(root)).toBe('dist/ has no built CLI');
    file('dist/cli/main.js', T + 10);
    expect(staleBecause(root)).toBe('dist/ has no .build-stamp (built by an older build)');
  });

  it('is fresh while no source is newer than the stamp, whatever tests and the front end do', () => {
    file('dist/cli/main.js', T + 10);
    writeBuildStamp(root, T + 5);
    expect(staleBecause(root)).toBeUndefined();
    file('src/cli/main.test.ts', T + 60_000);
    file('src/budget/store.case.ts', T + 60_000);
    file('src/dashboard/web/app.ts', T + 60_000);
    expect(staleBecause(root)).toBeUndefined();
  });

  it('is stale once a source or the compiler settings change after the build began', () => {
    file('dist/cli/main.js', T + 10);
    writeBuildStamp(root, T + 5);
    file('src/sim/engine/engine.ts', T + 6);
    expect(staleBecause(root)).toBe('src/ changed after the last build');
    writeBuildStamp(root, T + 7);
    expect(staleBecause(root)).toBeUndefined();
    file('tsconfig.build.json', T + 8);
    expect(staleBecause(root)).toBe('src/ changed after the last build');
  });
});
