import { describe, expect, it } from 'vitest';
import { definePolicy } from './define-policy.js';
import { withRetryAfterWaited } from './retry-after-waited.js';

describe('withRetryAfterWaited', () => {
  it('waits for a Retry-After past the cap, and keeps the rest of the policy', () => {
    const policy = definePolicy({ maxAttempts: 4, retryAfter: { maxMs: '1m', onExceeded: 'dead-letter' } });
    const waited = withRetryAfterWaited(policy);
    expect(waited.retryAfter).toEqual({ maxMs: 60_000, onExceeded: 'wait' });
    expect({ ...waited, retryAfter: policy.retryAfter }).toEqual(policy);
    expect(Object.isFrozen(waited)).toBe(true);
    expect(policy.retryAfter.onExceeded).toBe('dead-letter');
  });

  it('returns a policy that already waits as it is', () => {
    const policy = definePolicy({ maxAttempts: 4, retryAfter: { maxMs: '1m', onExceeded: 'wait' } });
    expect(withRetryAfterWaited(policy)).toBe(policy);
  });
});
