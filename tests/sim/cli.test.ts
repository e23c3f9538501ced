import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, ensureCliBuilt, spawnCli } from '../helpers/cli.js';
import { STRATEGY_JSON_FIELDS } from './json-shape.js';

const fixture = (name: string) => fileURLToPath(new URL(`fixtures/${name}`, import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'stormguard-sim-cli-'));

beforeAll(() => ensureCliBuilt('simulate'), 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('stormguard simulate (built binary)', () => {
  it('says why a run stopped at the horizon: no capacity left, or retries held open', async () => {
    const capacity = await cli('simulate', '--scenario', fixture('over-capacity.yaml'), '--no-chart');
    expect(capacity.code).toBe(1);
    expect(capacity.stdout).toMatch(/^time to drain\s+not drained$/m);
    expect(capacity.stderr).toBe(
      'stormguard: ceiling-only: did not drain by the horizon: 92 jobs pending, 92 waiting for or holding a worker (the workers could not keep up: add workers or concurrency, or raise "horizon")\n',
    );
    const held = await cli('simulate', '--scenario', fixture('retries-held.yaml'), '--json');
    expect(held.code).toBe(1);
    expect(JSON.parse(held.stdout).strategies[0]).toMatchObject({ completed: 0, unfinished: 20 });
    expect(held.stderr).toBe(
      'stormguard: ceiling-only: did not drain by the horizon: 20 jobs pending, 20 delayed until a retry (raise "horizon", or give the policy a maxAgeMs)\n',
    );
  }, 60_000);

  it('a reader that closes the pipe early (| head -1) ends it quietly, not with an EPIPE stack trace', async () => {
    const child = spawnCli(['simulate', '--strategies', 'ceiling-only'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.destroy();
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  }, 60_000);

  it('with no argument runs the default scenario; --json prints exactly the documented shape; --report writes HTML', async () => {
    const report = join(dir, 'report.html');
    const { code, stdout, stderr } = await cli('simulate', '--json', '--report', report);
    expect(code).toBe(0);
    expect(stderr).toBe(`report written to ${report}\n`);
    const json = JSON.parse(stdout);
    expect(Object.keys(json)).toEqual(['scenario', 'seed', 'strategies']);
    expect(json.scenario).toBe('search-cluster-outage');
    expect(json.strategies.map((s: { name: string }) => s.name)).toEqual([
      'ceiling-only',
      'fleet-budget',
      'per-worker-budgets',
      'flow-control',
    ]);
    for (const s of json.strategies) {
      expect(Object.keys(s)).toEqual(STRATEGY_JSON_FIELDS);
      expect(s.lost).toBe(0);
      expect(Object.keys(s.requests)).toEqual(['search']);
      expect(Object.keys(s.requests.search)).toEqual([
        'first',
        'retries',
        'retriesWhileDown',
        'recoveryPeakPerSecond',
      ]);
    }
    const html = readFileSync(report, 'utf8');
    expect(html).toContain('<script id="report-data" type="application/json">');
    expect(html).not.toMatch(/<script[^>]+src=/); // self-contained: nothing to fetch
  }, 120_000);

  it('--example prints a scenario that runs; --strategies and --seed narrow and reseed it', async () => {
    const example = await cli('simulate', '--example');
    expect(example.code).toBe(0);
    const file = join(dir, 'my-scenario.yaml');
    writeFileSync(file, example.stdout);
    const args = ['simulate', '--scenario', file, '--strategies', 'ceiling-only,fleet-budget', '--json'];
    const a = await cli(...args, '--seed', '5');
    const b = await cli(...args, '--seed', '5');
    expect(a.code).toBe(0);
    expect(a.stdout).toBe(b.stdout);
    const json = JSON.parse(a.stdout);
    expect(json.seed).toBe(5);
    expect(json.strategies.map((s: { name: string }) => s.name)).toEqual(['ceiling-only', 'fleet-budget']);
  }, 60_000);

  it('prints the summary table and the retry chart for people', async () => {
    const file = join(dir, 'example.yaml');
    writeFileSync(file, (await cli('simulate', '--example')).stdout);
    const { code, stdout } = await cli(
      'simulate',
      '--scenario',
      file,
      '--strategies',
      'ceiling-only,fleet-budget',
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/^mail: retries\s+[\d,]+\s+[\d,]+$/m);
    expect(stdout).toMatch(/^jobs lost\s+0\s+0$/m);
    expect(stdout).toContain('retries/s over time');
  }, 60_000);

  it.each([
    [['--scenario', fixture('no-workers.yaml')], /workers\.count: 0 is invalid: must be >= 1/],
    [['--scenario', join(dir, 'missing.yaml')], /--scenario: cannot read .*missing\.yaml \(ENOENT\)/],
    [['--seed', 'abc'], /--seed: "abc" is not a whole number/],
    [['--strategies', 'fleet'], /"fleet" is not a strategy of this scenario/],
    [['--scenario', ''], /^stormguard: --scenario: the value is empty \(expected: a YAML or JSON scenario/],
    [['--report', ' '], /^stormguard: --report: the value is empty/],
  ])(
    'refuses bad input %j with exit code 2 and one line, no stack trace',
    async (args, message) => {
      const { code, stdout, stderr } = await cli('simulate', ...args);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toMatch(message);
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr).not.toContain('    at ');
    },
    30_000,
  );
});
