/**
 * The public surface grows or shrinks only by a reviewed change: each entry point's export names (values,
 * and types as `type Name`) are recorded in exports.json; a difference fails here until the record is
 * rewritten (`npx tsx tests/surface/exports.ts`) and the change is reviewed with it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { entryPoints, RECORD, surface } from './exports.js';

const recorded = JSON.parse(readFileSync(RECORD, 'utf8')) as Record<string, string[]>;

describe('the public surface', () => {
  const actual = surface();

  it('records every entry point of package.json, and only those', () => {
    expect(Object.keys(recorded).sort()).toEqual(Object.keys(entryPoints()).sort());
  });

  for (const subpath of Object.keys(recorded)) {
    const name = subpath === '.' ? 'stormguard' : `stormguard/${subpath.slice(2)}`;
    it(`${name} exports the recorded names (npx tsx tests/surface/exports.ts records a reviewed change)`, () => {
      const names = actual[subpath] ?? [];
      const expected = recorded[subpath] ?? [];
      expect({
        added: names.filter((n) => !expected.includes(n)),
        removed: expected.filter((n) => !names.includes(n)),
      }).toEqual({ added: [], removed: [] });
    });
  }
});
