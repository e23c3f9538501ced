/**
 * The breaker page shows how to wrap a call by hand. A half-open breaker counts only the outcomes of the
 * probes it admitted, so an outcome recorded without the call's admission can never close (or reopen) it:
 * every breaker outcome the page shows must pass the admission `acquire` returned.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { fencedBlocks } from './markdown.js';

const page = readFileSync(join(ROOT, 'docs/breaker.md'), 'utf8');
const section = page.slice(page.indexOf('**Wrapping calls yourself**'), page.indexOf('**Cost per call.**'));

describe('docs/breaker.md', () => {
  it('passes the admission to every breaker outcome it shows', () => {
    const calls = [...page.matchAll(/breaker\.record(?:Success|Failure)\(([^)]*)\)/g)].map((m) => m[0]);
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) expect(call).toMatch(/\(\s*[^,]+,\s*admission\s*\)/);
    // The methods list gives the signatures.
    expect(page).toContain('`recordSuccess(dependency, admission)`, `recordFailure(dependency, admission)`');
  });

  it('wraps a call by hand in code: acquire, then the same admission with the outcome', () => {
    expect(section.length, 'the "Wrapping calls yourself" section').toBeGreaterThan(200);
    const code =
      fencedBlocks(section)
        .find((b) => b.lang === 'ts')
        ?.lines.join('\n') ?? '';
    expect(code).toMatch(/const admission = await breaker\.acquire\(/);
    expect(code).toMatch(/breaker\.recordSuccess\('search', admission\)/);
    expect(code).toMatch(/breaker\.recordFailure\('search', admission\)/);
    expect(section).toMatch(/budget/i);
  });

  it('shows the code of examples/wrap-a-call.ts, which the build type-checks', () => {
    const example = readFileSync(join(ROOT, 'examples/wrap-a-call.ts'), 'utf8');
    const code = fencedBlocks(section).find((b) => b.lang === 'ts')?.lines ?? [];
    const indented = code.map((l) => (l ? `  ${l}` : l)).join('\n');
    expect(code.length).toBeGreaterThan(5);
    expect(example).toContain(indented);
  });
});
