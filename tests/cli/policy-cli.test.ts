import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, ensureCliBuilt } from '../helpers/cli.js';

const fixture = (name: string) => fileURLToPath(new URL(`fixtures/${name}`, import.meta.url));
beforeAll(() => ensureCliBuilt('plan'), 120_000);

describe('stormguard plan', () => {
  it('plans a 15-minute window: 9 retries, 10 attempts, the schedule', async () => {
    const { code, stdout, stderr } = await cli('plan', '--window', '15m');
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toContain('window 15m: 9 retries, maxAttempts 10');
    expect(stdout).toMatch(/^9\s+10\s+8m 32s\s+17m 2s$/m);
    expect(stdout).not.toContain('warning');
  });

  it('--json prints exactly the planForWindow object', async () => {
    const { code, stdout } = await cli('plan', '--window', '60s', '--json');
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      retries: 5,
      maxAttempts: 6,
      delaysMs: [2_000, 4_000, 8_000, 16_000, 32_000],
      spanMs: 62_000,
      warnings: [],
      windowMs: 60_000,
      backoff: { type: 'exponential', baseMs: 2_000, factor: 2, maxDelayMs: 600_000 },
    });
  });

  it('--fit lands the span within 1 % and a long window warns about a dead-letter queue', async () => {
    const plan = JSON.parse((await cli('plan', '--window', '4h', '--fit', '--json')).stdout);
    expect(plan.retries).toBe(32);
    expect(Math.abs(plan.spanMs - 14_400_000)).toBeLessThanOrEqual(144_000);
    expect(plan.warnings.join()).toMatch(/dead-letter queue and replay/);
  });

  it('honours --base, --factor and --cap', async () => {
    const plan = JSON.parse(
      (await cli('plan', '--window', '1m', '--base', '10s', '--factor', '3', '--cap', '30s', '--json'))
        .stdout,
    );
    expect(plan.delaysMs).toEqual([10_000, 30_000, 30_000]);
  });

  it('--table prints the chart computed: 5, 8, 9, 14, 32 retries', async () => {
    const { code, stdout } = await cli('plan', '--table');
    expect(code).toBe(0);
    for (const [window, retries, attempts] of [
      ['1m', 5, 6],
      ['5m', 8, 9],
      ['15m', 9, 10],
      ['1h', 14, 15],
      ['4h', 32, 33],
    ])
      expect(stdout).toMatch(new RegExp(`^${window}\\s+${retries}\\s+${attempts}\\s`, 'm'));
    const json = JSON.parse((await cli('plan', '--table', '--json')).stdout);
    expect(json.map((p: { retries: number }) => p.retries)).toEqual([5, 8, 9, 14, 32]);
  });

  it('--table with --window puts that window in the chart, in order, instead of ignoring it', async () => {
    const { code, stdout } = await cli('plan', '--table', '--window', '2h');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^1h\s+14\s+15\s[^\n]*\n2h\s+20\s+21\s[^\n]*\n4h\s+32\s+33\s/m);
    const json = JSON.parse((await cli('plan', '--table', '--window', '2h', '--json')).stdout);
    expect(json.map((p: { windowMs: number }) => p.windowMs)).toEqual([
      60_000, 300_000, 900_000, 3_600_000, 7_200_000, 14_400_000,
    ]);
  });

  it('warns when a slow-growing backoff needs hundreds of attempts (factor 1: 451)', async () => {
    const { code, stdout } = await cli('plan', '--window', '15m', '--factor', '1');
    expect(code).toBe(0);
    expect(stdout).toContain('450 retries, maxAttempts 451');
    expect(stdout).toContain(
      'warning: factor 1 keeps every delay at 2s: 450 retries, one every 2s, are a steady load on a dependency that is down; use a factor of 2 or more',
    );
    const plan = JSON.parse(
      (await cli('plan', '--window', '15m', '--base', '1s', '--factor', '1.05', '--json')).stdout,
    );
    expect(plan.warnings).toEqual([
      `${plan.retries} retries (maxAttempts ${plan.retries + 1}) to cover 15m: the delays grow too slowly to spare a dependency that is down; raise the factor or the base`,
    ]);
    expect(plan.retries).toBeGreaterThan(20);
  });

  it.each([
    [
      ['plan', '--window', '0'],
      /^stormguard: --window: "0" must be longer than 0; give the recovery window, e\.g\. --window 15m$/m,
    ],
    [['plan', '--window', '15x'], /--window: "15x" is not a duration/],
    [['plan', '--window', '15m', '--factor', 'two'], /--factor: "two" is not a number >= 1/],
    [['plan', '--window', '15m', '--cap', '1s'], /--cap: 1s is shorter than --base 2s/],
    [['plan'], /give --window <duration>/],
  ])('bad input %j: one line, exit 2', async (args, message) => {
    const { code, stdout, stderr } = await cli(...args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
    expect(stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('configs that are code', () => {
  const dir = mkdtempSync(join(tmpdir(), 'stormguard-config-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lint and schedule --no-exec refuse a .mjs or .ts config without running it, and read YAML', async () => {
    const marker = join(dir, 'ran');
    const code = join(dir, 'policies.mjs');
    writeFileSync(
      code,
      `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, '1');\nexport default { policies: { a: { maxAttempts: 2 } } };\n`,
    );
    for (const args of [
      ['lint', '--no-exec', code],
      ['schedule', '--no-exec', '--config', code],
    ]) {
      const { code: exit, stdout, stderr } = await cli(...args);
      expect(exit).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toBe(
        `stormguard: ${code}: a .mjs config is code, and loading it would run it; with --no-exec only data formats are read (.json, .yaml, .yml)\n`,
      );
    }
    expect(existsSync(marker)).toBe(false);
    const lint = await cli('lint', '--no-exec', 'tests/cli/fixtures/good.yaml');
    expect(lint.code).toBe(0);
    // Without --no-exec the module runs: that is what the flag is for.
    expect((await cli('lint', code)).code).not.toBe(2);
    expect(existsSync(marker)).toBe(true);
  });

  it('a JavaScript config with a syntax error names the line', async () => {
    const broken = join(dir, 'broken.mjs');
    writeFileSync(broken, 'export default {\n  policies: { a: 1 ]\n};\n');
    const { code, stderr } = await cli('lint', broken);
    expect(code).toBe(2);
    expect(stderr).toBe(
      `stormguard: ${broken}: the config module failed to load: Unexpected token ']' (at ${broken}:2)\n`,
    );
  });
});

describe('stormguard schedule', () => {
  it('shows each retry of the email preset with min, median and max delay', async () => {
    const { code, stdout } = await cli('schedule', '--preset', 'email', '--samples', '500');
    expect(code).toBe(0);
    expect(stdout).toContain('policy email: maxAttempts 8, jitter full, max age 1d');
    expect(stdout.match(/^[1-7]\s+[2-8]\s+/gm)).toHaveLength(7);
  });

  it('--json: reproducible with a seed, every delay within the jitter bounds', async () => {
    const first = JSON.parse(
      (await cli('schedule', '--preset', 'payment', '--samples', '300', '--seed', '9', '--json')).stdout,
    );
    const again = JSON.parse(
      (await cli('schedule', '--preset', 'payment', '--samples', '300', '--seed', '9', '--json')).stdout,
    );
    expect(again).toEqual(first);
    expect(first).toMatchObject({ policy: 'payment', samples: 300, maxAttempts: 4, maxAgeMs: 3_600_000 });
    expect(first.retries.map((r: { delay: { maxMs: number } }) => r.delay.maxMs <= 10_000 * 2 ** 2)).toEqual([
      true,
      true,
      true,
    ]);
    expect(first.retries[0].delay.maxMs).toBeLessThanOrEqual(10_000);
  });

  it('reads a policy from a config file', async () => {
    const { code, stdout } = await cli(
      'schedule',
      '--config',
      fixture('good.yaml'),
      '--policy',
      'search',
      '--json',
    );
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ policy: 'search', maxAttempts: 6, maxAgeMs: 600_000 });
  });

  it.each([
    [['schedule', '--preset', 'sms'], /unknown preset "sms"; use one of idempotentInternal, .*payment/],
    [['schedule', '--preset', 'email', '--samples', 'many'], /--samples: "many" is not a whole number/],
    [['schedule', '--config', fixture('good.yaml')], /holds several policies; choose one with --policy/],
  ])('bad input %j: exit 2', async (args, message) => {
    const { code, stderr } = await cli(...args);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });
});

describe('stormguard lint', () => {
  it('passes a config that follows the checklist (exit 0)', async () => {
    const { code, stdout } = await cli('lint', fixture('good.yaml'));
    expect(code).toBe(0);
    expect(stdout).toMatch(/3 policies, 0 errors, 0 warnings/);
  });

  it('reports each finding with severity and exits 1 on errors', async () => {
    const { code, stdout } = await cli('lint', fixture('bad.json'), '--json');
    expect(code).toBe(1);
    const report = JSON.parse(stdout);
    const has = (severity: string, policy: string | null, rule: string) =>
      report.findings.some(
        (f: { severity: string; policy: string | null; rule: string }) =>
          f.severity === severity && f.policy === policy && f.rule === rule,
      );
    expect(has('warning', null, 'dead-letter')).toBe(true);
    expect(has('error', 'webhook', 'idempotency')).toBe(true); // key TTL 1h < max age 2h
    expect(has('warning', 'storm', 'jitter')).toBe(true);
    expect(has('warning', 'storm', 'cap')).toBe(true);
    expect(has('warning', 'storm', 'limits')).toBe(true);
    expect(has('error', 'broken', 'valid')).toBe(true);
    expect(report.errors).toBe(2);
  });

  it('prints a human table sorted by severity', async () => {
    const { code, stdout } = await cli('lint', fixture('bad.json'));
    expect(code).toBe(1);
    const severities = stdout
      .split('\n')
      .map((line) => line.split(/\s+/)[0])
      .filter((word) => word === 'error' || word === 'warning' || word === 'info');
    const rank = { error: 0, warning: 1, info: 2 } as Record<string, number>;
    expect(severities).toEqual([...severities].sort((a, b) => rank[a!]! - rank[b!]!));
    expect(severities).toContain('info');
    expect(stdout).toMatch(/3 policies, 2 errors/);
  });

  it('loads JavaScript and TypeScript configs', async () => {
    expect((await cli('lint', fixture('policies.mjs'))).code).toBe(0);
    const ts = await cli('lint', fixture('policies.ts'), '--json');
    expect(ts.code).toBe(0);
    expect(JSON.parse(ts.stdout).policies).toEqual(['search']);
  });

  it.each([
    [['lint', 'missing.yaml'], /missing.yaml: config file does not exist/],
    [['lint', fixture('policies.mjs').replace('.mjs', '.toml')], /unsupported config file type ".toml"/],
  ])('bad input %j: exit 2', async (args, message) => {
    const { code, stderr } = await cli(...args);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });
});
