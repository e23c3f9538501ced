/**
 * The end-to-end tests (tests/e2e: the seed's four verifications, SIGKILL mid-job, a mixed load, replay
 * killed half-way and run again) once more on a Redis Cluster, in a vitest of their own with
 * `STORMGUARD_TEST_BACKEND=cluster`: the harness starts three masters with a replica each and runs BullMQ
 * under `{bull}`.
 */
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { runVitest } from '../helpers/vitest-child.js';

describe('the end-to-end tests on a Redis Cluster', () => {
  it('pass', async () => {
    const { code, output } = await runVitest(['run', 'tests/e2e', '--reporter=dot'], {
      cwd: ROOT,
      env: { STORMGUARD_TEST_BACKEND: 'cluster' },
    });
    // On failure, the nested run's own report says which case failed and why.
    expect({ code, output: code === 0 ? '' : output.slice(-4_000) }).toEqual({ code: 0, output: '' });
    // Every case ran and passed (a failure reads "Tests  1 failed | 7 passed"), on the cluster bed.
    expect(stripVTControlCharacters(output)).toMatch(/Tests\s+\d+ passed \(\d+\)/);
  }, 240_000);
});
