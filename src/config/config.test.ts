import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import { presets } from '../policy/presets.js';
import { loadPolicies } from './load-policies.js';
import { resolvePolicyEntry } from './policy-config.js';

const dir = mkdtempSync(join(tmpdir(), 'stormguard-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

async function loadError(path: string): Promise<string> {
  try {
    await loadPolicies(path);
  } catch (error) {
    expect(isInvalidInputError(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected loadPolicies to reject');
}

describe('resolvePolicyEntry', () => {
  it('lays overrides over a preset, merging backoff and retryAfter field by field', () => {
    const p = resolvePolicyEntry(
      'newsletter',
      { preset: 'email', maxAttempts: 4, backoff: { baseMs: '1s' } },
      {},
    );
    expect(p).toMatchObject({
      name: 'newsletter',
      maxAttempts: 4,
      maxAgeMs: presets.email.maxAgeMs,
      retryOn: ['network', 'http-5xx'],
      backoff: { type: 'exponential', baseMs: 1_000, factor: 2, maxDelayMs: 900_000 },
    });
  });

  it('replaces the backoff whole when its type changes', () => {
    const p = resolvePolicyEntry('x', { preset: 'email', backoff: { type: 'fixed', delayMs: '30s' } }, {});
    expect(p.backoff).toEqual({ type: 'fixed', delayMs: 30_000 });
  });

  it("applies the config's key TTL to key-required policies only", () => {
    const ttl = { idempotencyKeyTtlMs: 7_200_000 };
    expect(
      resolvePolicyEntry('w', { maxAttempts: 3, idempotency: 'key-required', maxAgeMs: '1h' }, ttl)
        .idempotencyKeyTtlMs,
    ).toBe(7_200_000);
    expect(resolvePolicyEntry('e', { preset: 'email' }, ttl).idempotencyKeyTtlMs).toBeUndefined();
    expect(() =>
      resolvePolicyEntry('w', { maxAttempts: 3, idempotency: 'key-required', maxAgeMs: '4h' }, ttl),
    ).toThrow(/idempotencyKeyTtlMs: 7200000 is invalid: must be >= maxAgeMs/);
  });

  it('names the policy in its errors', () => {
    expect(() => resolvePolicyEntry('search', 'fast', {})).toThrow(/policy "search": must be an object/);
    expect(() => resolvePolicyEntry('search', { preset: 3 }, {})).toThrow(
      /policy "search": preset must be a preset name such as "email" or "idempotent-internal", got 3/,
    );
    expect(() => resolvePolicyEntry('search', { preset: 'sms' }, {})).toThrow(/unknown preset "sms"/);
    expect(() => resolvePolicyEntry('search', { maxAttempts: 0 }, {})).toThrow(
      /invalid retry policy "search": maxAttempts/,
    );
  });
});

describe('loadPolicies', () => {
  it('reads JSON, YAML and JavaScript modules alike', async () => {
    const json = file(
      'a.json',
      JSON.stringify({ deadLetter: 'dlq', policies: { crm: { preset: 'metered-api' } } }),
    );
    const yaml = file('a.yaml', 'deadLetter: dlq\npolicies:\n  crm:\n    preset: metered-api\n');
    const mjs = file(
      'a.mjs',
      "export default { deadLetter: 'dlq', policies: { crm: { preset: 'metered-api' } } };\n",
    );
    for (const path of [json, yaml, mjs]) {
      const config = await loadPolicies(path);
      expect(config.deadLetter).toBe('dlq');
      expect(config.policies.crm).toEqual({ ...presets.meteredApi, name: 'crm' });
    }
  });

  it('explains what is wrong with the file', async () => {
    expect(await loadError(join(dir, 'none.yaml'))).toMatch(/none.yaml: config file does not exist/);
    expect(await loadError(file('b.json', '{ "policies": '))).toMatch(/b.json: not valid JSON/);
    expect(await loadError(file('b.yaml', 'policies: [1, 2'))).toMatch(/b.yaml: not valid YAML/);
    expect(await loadError(file('b.toml', 'x = 1'))).toMatch(
      /unsupported config file type ".toml"; use .json, .yaml/,
    );
    expect(await loadError(file('c.json', '{ "policies": {} }'))).toMatch(
      /policies: {} is invalid: must name at least one policy/,
    );
    expect(await loadError(file('d.json', '{ "policy": { "a": {} } }'))).toMatch(/Unrecognized key/i);
    expect(await loadError(file('e.mjs', 'throw new Error("boom")'))).toMatch(
      /e.mjs: the config module failed to load: boom/,
    );
  });

  it('a .ts config with export default loads in a CommonJS project (no "type": "module")', async () => {
    const project = join(dir, 'cjs-project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), '{ "name": "app" }\n');
    const path = join(project, 'stormguard.config.ts');
    writeFileSync(
      path,
      'const attempts: number = 3;\nexport default { policies: { search: { maxAttempts: attempts } } };\n',
    );
    const config = await loadPolicies(path);
    expect(config.policies.search?.maxAttempts).toBe(3);
  });

  // JavaScript syntax errors are checked through the built CLI (tests/cli/policy-cli.test.ts): under
  // vitest, import() goes through Vite's transform, not Node's loader.
  it('a .ts syntax error names the line and column', async () => {
    expect(await loadError(file('s.ts', 'export default {\n  policies: { a: 1 }\n;\n'))).toMatch(
      /s\.ts: the config module failed to load: Expected "}" but found ";" \(at .*s\.ts:3:\d+\)$/,
    );
  });

  it('with execute: false reads data formats and refuses configs that are code, without running them', async () => {
    const marker = join(dir, 'ran');
    const code = file(
      'x.mjs',
      `import { writeFileSync } from 'node:fs'; writeFileSync(${JSON.stringify(marker)}, '1'); export default {};`,
    );
    let error: unknown;
    try {
      await loadPolicies(code, { execute: false });
    } catch (e) {
      error = e;
    }
    expect(isInvalidInputError(error)).toBe(true);
    expect((error as Error).message).toBe(
      `${code}: a .mjs config is code, and loading it would run it; with --no-exec only data formats are read (.json, .yaml, .yml)`,
    );
    expect(existsSync(marker)).toBe(false);
    const data = file('x.yaml', 'policies:\n  search: { maxAttempts: 3 }\n');
    expect((await loadPolicies(data, { execute: false })).policies.search?.maxAttempts).toBe(3);
  });
});
