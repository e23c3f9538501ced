import { describe, expect, it } from 'vitest';
import { PermanentError } from '../../errors/permanent-error.js';
import { TransientError } from '../../errors/transient-error.js';
import { definePolicy } from '../define-policy.js';
import type { Classifier } from '../types.js';
import { classify } from './classify.js';
import { causeChain, composeClassifiers } from './compose.js';
import { parseRetryAfter, readRetryAfter } from './retry-after.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const all = definePolicy({ maxAttempts: 3 });
const codeError = (code: string, extra: object = {}) => Object.assign(new Error(code), { code }, extra);
const label = (error: unknown) => {
  const c = classify(error, all, NOW);
  return [c.retryable, c.reason];
};

describe("classify: the application's own markings", () => {
  it('retries a TransientError with its Retry-After and never a PermanentError', () => {
    expect(classify(new TransientError('x', { retryAfterMs: 5_000 }), all, NOW)).toEqual({
      retryable: true,
      reason: 'transient-error',
      retryAfterMs: 5_000,
    });
    expect(label(new PermanentError('x'))).toEqual([false, 'permanent-error']);
  });

  it('a PermanentError wrapping a retryable cause stays permanent (outermost opinion wins)', () => {
    expect(label(new PermanentError('bad', { cause: codeError('ECONNRESET') }))).toEqual([
      false,
      'permanent-error',
    ]);
  });
});

describe('classify: HTTP status', () => {
  it.each([
    [200, false],
    [204, false],
    [301, false],
    [400, false],
    [401, false],
    [403, false],
    [404, false],
    [409, false],
    [422, false],
    [408, true],
    [429, true],
    [500, true],
    [502, true],
    [503, true],
    [504, true],
    [599, true],
  ])('status %i → retryable %s', (status, retryable) => {
    expect(label({ status })).toEqual([retryable, `http-${status}`]);
  });

  it.each([
    ['status', { status: 503 }],
    ['statusCode', { statusCode: 503 }],
    ['response.status', { response: { status: 503 } }],
    ['response.statusCode', { response: { statusCode: 503 } }],
  ])('reads %s', (_, error) => {
    expect(label(error)).toEqual([true, 'http-503']);
  });

  it('ignores a status that is not an HTTP status code', () => {
    expect(label({ status: 'failed' })).toEqual([false, 'unknown']);
    expect(label({ status: 42 })).toEqual([false, 'unknown']);
  });

  it('families: 408/429 are throttling, 5xx are server failures', () => {
    expect(classify({ status: 429 }, all, NOW).family).toBe('http-throttle');
    expect(classify({ status: 502 }, all, NOW).family).toBe('http-5xx');
  });
});

describe('Retry-After', () => {
  it('parses delta-seconds and HTTP-dates against now', () => {
    expect(parseRetryAfter('120', NOW)).toBe(120_000);
    expect(parseRetryAfter(' 7 ', NOW)).toBe(7_000);
    expect(parseRetryAfter(3, NOW)).toBe(3_000);
    expect(parseRetryAfter(new Date(NOW + 90_000).toUTCString(), NOW)).toBe(90_000);
    expect(parseRetryAfter(new Date(NOW - 90_000).toUTCString(), NOW)).toBe(0);
  });

  it.each(['soon', '-5', '', '12abc', null, -1])('ignores %j', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });

  it.each([
    ['plain headers, any case', { status: 429, headers: { 'Retry-After': '30' } }],
    ['header array', { status: 429, headers: { 'retry-after': ['30'] } }],
    ['Headers object', { status: 503, headers: new Headers({ 'retry-after': '30' }) }],
    ['response.headers', { response: { status: 503, headers: { 'retry-after': '30' } } }],
    ['retry-after-ms header', { status: 429, headers: { 'retry-after-ms': '30000' } }],
    ['retryAfterMs field', { status: 429, retryAfterMs: 30_000 }],
    ['retryAfter field in seconds', { status: 429, retryAfter: 30 }],
    ['HTTP-date', { status: 503, headers: { 'retry-after': new Date(NOW + 30_000).toUTCString() } }],
  ])('is read from %s', (_, error) => {
    expect(classify(error, all, NOW).retryAfterMs).toBe(30_000);
    expect(readRetryAfter(error, NOW)).toBe(30_000);
  });

  it('is not attached to a status that is not retried', () => {
    expect(
      classify({ status: 400, headers: { 'retry-after': '30' } }, all, NOW).retryAfterMs,
    ).toBeUndefined();
  });
});

describe('classify: network codes', () => {
  it.each([
    'ECONNRESET',
    'ECONNREFUSED',
    'ECONNABORTED',
    'ETIMEDOUT',
    'ESOCKETTIMEDOUT',
    'EPIPE',
    'EAI_AGAIN',
    'ENOTFOUND',
    'EHOSTUNREACH',
    'EHOSTDOWN',
    'ENETUNREACH',
    'ENETDOWN',
    'ENETRESET',
    'UND_ERR_CONNECT_TIMEOUT',
    'UND_ERR_HEADERS_TIMEOUT',
    'UND_ERR_BODY_TIMEOUT',
    'UND_ERR_SOCKET',
    'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  ])('%s is retryable', (code) => {
    expect(label(codeError(code))).toEqual([true, code]);
  });

  it.each(['UND_ERR_INVALID_ARG', 'UND_ERR_ABORTED', 'UND_ERR_NOT_SUPPORTED', 'UND_ERR_SOMETHING_NEW'])(
    '%s is not, under one bounded label',
    (code) => {
      expect(label(codeError(code))).toEqual([false, 'UND_ERR_OTHER']);
    },
  );

  it('reads the cause chain: fetch wraps the socket error', () => {
    const fetchError = new TypeError('fetch failed', { cause: codeError('UND_ERR_SOCKET') });
    expect(label(fetchError)).toEqual([true, 'UND_ERR_SOCKET']);
    const deep = new Error('outer', { cause: new Error('mid', { cause: codeError('ECONNREFUSED') }) });
    expect(label(deep)).toEqual([true, 'ECONNREFUSED']);
  });

  it('reads the inner errors of an AggregateError', () => {
    expect(label(new AggregateError([codeError('ECONNREFUSED')], 'connect failed'))).toEqual([
      true,
      'ECONNREFUSED',
    ]);
  });

  it('a timeout signal is retryable, a caller abort is not', () => {
    expect(label(new DOMException('timed out', 'TimeoutError'))).toEqual([true, 'timeout']);
    expect(label(new DOMException('aborted', 'AbortError'))).toEqual([false, 'aborted']);
  });

  it('survives cycles in the cause chain', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(causeChain(a)).toHaveLength(2);
    expect(label(a)).toEqual([false, 'unknown']);
  });
});

describe('classify: databases', () => {
  it.each([
    ['40001', true],
    ['40P01', true],
    ['55P03', true],
    ['57P01', true],
    ['57P03', true],
    ['53300', true],
    ['08000', true],
    ['08006', true],
    ['08P01', true],
    ['23505', false],
    ['23503', false],
    ['42P01', false],
    ['42601', false],
    ['22P02', false],
  ])('Postgres %s → retryable %s', (code, retryable) => {
    expect(label(codeError(code, { severity: 'ERROR' }))).toEqual([retryable, `pg-${code}`]);
  });

  it('a SQLSTATE in neither list has no opinion (falls to retryUnknown)', () => {
    expect(label(codeError('XX000'))).toEqual([false, 'unknown']);
    expect(label(codeError('0A000'))).toEqual([false, 'unknown']);
  });

  it.each([
    [1213, 'ER_LOCK_DEADLOCK', true],
    [1205, 'ER_LOCK_WAIT_TIMEOUT', true],
    [1040, 'ER_CON_COUNT_ERROR', true],
    [2013, 'CR_SERVER_LOST', true],
    [1062, 'ER_DUP_ENTRY', false],
    [1064, 'ER_PARSE_ERROR', false],
  ])('MySQL errno %i (%s) → retryable %s', (errno, code, retryable) => {
    expect(label(codeError(code, { errno, sqlState: '40001' }))).toEqual([retryable, `mysql-${errno}`]);
  });

  it('a Node system error errno is not read as MySQL', () => {
    expect(label(codeError('ECONNRESET', { errno: -104 }))).toEqual([true, 'ECONNRESET']);
    expect(label({ errno: 1213 })).toEqual([false, 'unknown']);
  });
});

describe('classify: policy rules', () => {
  it('unknown errors follow retryUnknown', () => {
    expect(classify(new Error('?'), all, NOW)).toEqual({ retryable: false, reason: 'unknown' });
    expect(classify(new Error('?'), definePolicy({ maxAttempts: 2, retryUnknown: true }), NOW)).toEqual({
      retryable: true,
      reason: 'unknown',
    });
  });

  it("the policy's own classifiers come first, through the cause chain too", () => {
    class QuotaError extends Error {}
    const quota: Classifier = (e) =>
      e instanceof QuotaError ? { retryable: false, reason: 'quota' } : undefined;
    const policy = definePolicy({ maxAttempts: 3, classifiers: [quota] });
    expect(label(new QuotaError('x'))).toEqual([false, 'unknown']);
    expect(classify(Object.assign(new QuotaError('x'), { status: 503 }), policy, NOW).reason).toBe('quota');
    expect(classify(new Error('wrap', { cause: new QuotaError('x') }), policy, NOW).reason).toBe('quota');
    expect(classify({ status: 503 }, policy, NOW).reason).toBe('http-503');
  });

  it('retryOn leaves out whole families, keeping the label', () => {
    const email = definePolicy({ maxAttempts: 8, retryOn: ['network', 'http-5xx'] });
    expect(classify({ status: 429 }, email, NOW)).toMatchObject({ retryable: false, reason: 'http-429' });
    expect(classify({ status: 503 }, email, NOW).retryable).toBe(true);
    expect(classify(codeError('40001'), email, NOW).retryable).toBe(false);
    const marked = definePolicy({ maxAttempts: 4, retryOn: [] });
    expect(classify(codeError('ECONNRESET'), marked, NOW).retryable).toBe(false);
    expect(classify(new TransientError('gateway says retry'), marked, NOW).retryable).toBe(true);
  });

  it('composeClassifiers asks in order and the first opinion wins', () => {
    const calls: string[] = [];
    const a: Classifier = () => {
      calls.push('a');
      return undefined;
    };
    const b: Classifier = () => {
      calls.push('b');
      return { retryable: true, reason: 'b' };
    };
    const c: Classifier = () => {
      calls.push('c');
      return { retryable: false, reason: 'c' };
    };
    expect(composeClassifiers(a, b, c)(new Error())).toEqual({ retryable: true, reason: 'b' });
    expect(calls).toEqual(['a', 'b']);
  });
});
