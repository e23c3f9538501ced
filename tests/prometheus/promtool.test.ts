import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { DASHBOARD_FILE, RULES_FILE, RULES_TEST_FILE } from './rules-files.js';

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

  it("accept every dashboard query as PromQL (Grafana's variables filled in)", async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as {
      panels: { targets?: { expr: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(20);
    const rules = exprs.map((expr, i) => ({
      record: `dashboard:query_${i}`,
      expr: expr.replaceAll('$__rate_interval', '5m').replace(/\$(dependency|queue)\b/g, '.*'),
    }));
    const dir = mkdtempSync(join(tmpdir(), 'stormguard-dashboard-'));
    try {
      const file = join(dir, 'dashboard.rules.yml');
      writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules }] }));
      expect(await promtool('check', 'rules', file)).toContain(`SUCCESS: ${rules.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
