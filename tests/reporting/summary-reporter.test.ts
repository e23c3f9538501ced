/**
 * The closing summary line is what CI reads, so it must never say `0 failed` on a red run: each
 * scenario runs in a vitest of its own with the summary reporter, and the line and the exit code must
 * agree.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runVitest } from '../helpers/vitest-child.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

async function summaryOf(
  scenario: string,
): Promise<{ code: number | null; summary: string; output: string }> {
  const { code, output } = await runVitest(['run', '--config', 'vitest.config.ts', scenario], {
    cwd: FIXTURES,
  });
  const summary =
    output.split('\n').find((line) => line.startsWith('tests: ')) ?? `no summary line in:\n${output}`;
  return { code, summary, output };
}

describe('the summary reporter', { timeout: 60_000 }, () => {
  it('counts the passed tests of a green run, which exits 0', async () => {
    const run = await summaryOf('passing.scenario.ts');
    expect(run.summary).toBe('tests: 1 passed, 0 failed, 0 skipped');
    expect(run.code).toBe(0);
  });

  it.each([
    ['a failing test', 'failing-test.scenario.ts', 'tests: 1 passed, 1 failed, 0 skipped', undefined],
    [
      'an unhandled rejection after the tests passed',
      'unhandled-rejection.scenario.ts',
      'tests: 1 passed, 1 failed, 0 skipped',
      'error outside a test: unhandled: Error: rejected outside any test',
    ],
    [
      'an afterAll hook that throws',
      'failing-hook.scenario.ts',
      'tests: 1 passed, 1 failed, 0 skipped',
      'error outside a test: failing-hook.scenario.ts: Error: cleanup failed',
    ],
    [
      "a suite's beforeAll that throws (its tests are skipped)",
      'failing-suite-hook.scenario.ts',
      'tests: 0 passed, 1 failed, 1 skipped',
      'error outside a test: failing-suite-hook.scenario.ts > a suite whose setup fails: Error: setup failed',
    ],
    [
      'a test that skips itself, as one whose server is missing might',
      'skipping-test.scenario.ts',
      'tests: 1 passed, 1 failed, 1 skipped',
      'error outside a test: skipping-test.scenario.ts > skips when redis-server is missing: skipped;',
    ],
    [
      'a file that cannot load',
      'failing-import.scenario.ts',
      'tests: 0 passed, 1 failed, 0 skipped',
      "error outside a test: failing-import.scenario.ts: Error: Cannot find module './no-such-module.js'",
    ],
  ])('counts %s as a failure, and the run exits 1', async (_, scenario, summary, named) => {
    const run = await summaryOf(scenario);
    expect(run.summary).toBe(summary);
    if (named !== undefined) expect(run.output).toContain(named);
    expect(run.code).toBe(1);
  });
});
