import { describe, expect, it } from 'vitest';
import { decide } from '../policy/decide.js';
import { definePolicy } from '../policy/define-policy.js';
import { decideContext } from './decide-context.js';

const policy = definePolicy({
  maxAttempts: 3,
  backoff: { type: 'exponential', baseMs: 100, maxDelayMs: 10_000 },
  jitter: 'none',
});

describe('decideContext', () => {
  it('asks about the attempt after those charged, every field present', () => {
    const random = () => 0.5;
    const error = new Error('boom');
    expect(
      decideContext({
        policy,
        error,
        attemptsBefore: 2,
        previousDelayMs: 200,
        createdAtMs: 1_000,
        nowMs: 5_000,
        random,
        dependency: 'search',
        hasDeadLetterTarget: true,
      }),
    ).toStrictEqual({
      policy,
      error,
      attemptsMade: 3,
      createdAtMs: 1_000,
      nowMs: 5_000,
      random,
      dependency: 'search',
      previousDelayMs: 200,
      hasIdempotencyKey: undefined,
      hasDeadLetterTarget: true,
      budget: undefined,
      breaker: undefined,
    });
  });

  it('gives decide what it reads: the first failure of a job is retry 1 after the base delay', async () => {
    const decision = await decide(
      decideContext({
        policy,
        error: Object.assign(new Error('reset'), { code: 'ECONNRESET' }),
        attemptsBefore: 0,
        previousDelayMs: undefined,
        createdAtMs: 0,
        nowMs: 1_000,
        random: () => 0,
        dependency: 'search',
        hasDeadLetterTarget: true,
      }),
    );
    expect(decision).toMatchObject({ action: 'retry', delayMs: 100 });
  });
});
