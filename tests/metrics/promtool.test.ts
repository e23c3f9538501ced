import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { RULES_FILE, RULES_TEST_FILE } from './rules-files.js';

const run = promisify(execFile);

/** Runs promtool; a machine without it fails with the fix, never skips (CI installs it). */
async function promtool(...args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run('promtool', args, { cwd: dirname(RULES_FILE) });
    return stdout + stderr;
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (e.code === 'ENOENT')
      throw new Error(
        'promtool is not installed: install the Debian package "prometheus" (apt-get install prometheus), as .ci/run does',
      );
    throw new Error(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

describe('Prometheus rules', () => {
  it('pass promtool check rules', async () => {
    expect(await promtool('check', 'rules', RULES_FILE)).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('pass their promtool unit tests (each alert fires, and stays quiet on look-alikes)', async () => {
    expect(await promtool('test', 'rules', RULES_TEST_FILE)).toContain('SUCCESS');
  });
});
