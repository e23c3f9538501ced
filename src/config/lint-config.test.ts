import { describe, expect, it } from 'vitest';
import { lintConfig } from './lint-config.js';

const lint = (policies: Record<string, unknown>, extra: object = { deadLetter: 'dlq' }) =>
  lintConfig({ ...extra, policies }, 'test.yaml');
const rules = (policies: Record<string, unknown>, extra?: object) =>
  lint(policies, extra).findings.map((f) => `${f.severity} ${f.policy ?? '-'} ${f.rule}`);

describe('lintConfig', () => {
  it('every preset passes without errors or warnings', () => {
    const names = [
      'idempotentInternal',
      'meteredApi',
      'paidInference',
      'nonIdempotent',
      'batchReconciliation',
      'email',
      'payment',
    ];
    const report = lint(Object.fromEntries(names.map((n) => [n, { preset: n }])));
    expect(report.errors).toBe(0);
    expect(report.warnings).toBe(0);
    expect(report.policies).toEqual(names);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['undeclared idempotency', { maxAttempts: 3, maxAgeMs: '5m' }, 'warning p idempotency'],
    [
      'a key-required policy without TTL',
      { maxAttempts: 3, idempotency: 'key-required', maxAgeMs: '1h' },
      'warning p idempotency',
    ],
    [
      'a key-required policy without max age',
      { maxAttempts: 3, idempotency: 'key-required', idempotencyKeyTtlMs: '1d' },
      'warning p idempotency',
    ],
    [
      'key TTL below max age',
      { maxAttempts: 3, idempotency: 'key-required', maxAgeMs: '2h', idempotencyKeyTtlMs: '1h' },
      'error p idempotency',
    ],
    [
      'unknown errors retried on a side effect',
      {
        maxAttempts: 3,
        idempotency: 'key-required',
        maxAgeMs: '1h',
        idempotencyKeyTtlMs: '1d',
        retryUnknown: true,
      },
      'warning p classification',
    ],
    ['a curve past 15 minutes', { idempotency: 'idempotent', maxAttempts: 12 }, 'warning p limits'],
    [
      'a max age shorter than the first delay',
      {
        idempotency: 'idempotent',
        maxAttempts: 3,
        maxAgeMs: '1s',
        jitter: 'equal',
        backoff: { type: 'fixed', delayMs: '10s' },
      },
      'warning p limits',
    ],
    ['no jitter', { idempotency: 'idempotent', maxAttempts: 3, jitter: 'none' }, 'warning p jitter'],
    [
      'a cap above an hour',
      {
        idempotency: 'idempotent',
        maxAttempts: 3,
        backoff: { type: 'exponential', baseMs: '1s', maxDelayMs: '2h' },
      },
      'warning p cap',
    ],
    [
      'a zero delay',
      { idempotency: 'idempotent', maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0 } },
      'warning p cap',
    ],
    ['an invalid policy', { maxAttempts: Number.POSITIVE_INFINITY }, 'error p valid'],
  ])('finds %s', (_, policy, finding) => {
    expect(rules({ p: policy })).toContain(finding);
  });

  it('the dead-letter target: none named is a warning, false is an error', () => {
    const ok = { idempotency: 'idempotent', maxAttempts: 2, maxAgeMs: '1m' };
    expect(rules({ p: ok }, {})).toContain('warning - dead-letter');
    expect(rules({ p: ok }, { deadLetter: false })).toContain('error - dead-letter');
    expect(rules({ p: ok })).not.toContain('warning - dead-letter');
  });

  it('checks the other policies when one is invalid, and counts', () => {
    const report = lint({ bad: { maxAttempts: 0, jitter: 'lots' }, good: { preset: 'email' } });
    expect(report.errors).toBe(2);
    expect(report.findings.filter((f) => f.policy === 'good' && f.severity !== 'info')).toEqual([]);
  });

  it('rejects a file that is not a config at all', () => {
    expect(() => lintConfig([1, 2], 'x.json')).toThrow(/invalid config x.json/);
  });
});
