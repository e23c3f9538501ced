import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../common/random.js';
import { BrokenCircuitError } from '../errors/broken-circuit-error.js';
import { PermanentError } from '../errors/permanent-error.js';
import { TransientError } from '../errors/transient-error.js';
import { decide, decideSync } from './decide.js';
import { definePolicy } from './define-policy.js';
import type { BreakerGate, BudgetGate, DecideContext, RetryPolicy } from './types.js';

const policy = definePolicy({
  name: 'search',
  maxAttempts: 5,
  maxAgeMs: '10m',
  jitter: 'none',
  backoff: { type: 'exponential', baseMs: '2s', maxDelayMs: '1m' },
});
const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });

function ctx(overrides: Partial<DecideContext> = {}): DecideContext {
  return {
    policy,
    error: reset,
    attemptsMade: 1,
    createdAtMs: 0,
    nowMs: 0,
    random: seededRandom(1),
    dependency: 'search',
    ...overrides,
  };
}

/** A budget gate that records whether it was asked. */
function budget(granted: boolean, onExhausted?: 'dead-letter' | 'defer'): BudgetGate & { asked: number } {
  const gate = {
    asked: 0,
    onExhausted,
    trySpend: () => {
      gate.asked++;
      return { granted, windowMs: 60_000 };
    },
  };
  return gate;
}

const openBreaker = (halfOpenAtMs?: number): BreakerGate => ({
  check: () => (halfOpenAtMs === undefined ? { state: 'open' } : { state: 'open', halfOpenAtMs }),
});

describe('decide', () => {
  it('retries a transient error after the backoff delay, charging an attempt', async () => {
    expect(await decide(ctx({ attemptsMade: 3 }))).toEqual({
      action: 'retry',
      delayMs: 8_000,
      retry: 3,
      chargesAttempt: true,
      cause: 'backoff',
      classification: { retryable: true, reason: 'ECONNRESET', family: 'network' },
    });
  });

  it('dead-letters a permanent error without asking the budget or the breaker', async () => {
    const gate = budget(true);
    let breakerAsked = false;
    const breaker: BreakerGate = {
      check: () => {
        breakerAsked = true;
        return { state: 'closed' };
      },
    };
    const d = await decide(ctx({ error: new PermanentError('bad input'), budget: gate, breaker }));
    expect(d).toMatchObject({ action: 'dead-letter', reason: 'permanent' });
    expect(gate.asked).toBe(0);
    expect(breakerAsked).toBe(false);
  });

  it('stops at maxAttempts before asking the budget', async () => {
    const gate = budget(true);
    const d = await decide(ctx({ attemptsMade: 5, budget: gate }));
    expect(d).toMatchObject({
      action: 'dead-letter',
      reason: 'max-attempts',
      detail: '5 of 5 attempts made',
    });
    expect(gate.asked).toBe(0);
  });

  it('refuses a retry that could not start before maxAge, and clamps one that could', async () => {
    // attempt 5 would wait 16 s; at 9m50s only 10 s remain
    expect(await decide(ctx({ attemptsMade: 4, nowMs: 590_000 }))).toMatchObject({
      action: 'dead-letter',
      reason: 'max-age',
    });
    const jittered = { ...policy, jitter: 'full' as const };
    const d = await decide(ctx({ policy: jittered, attemptsMade: 4, nowMs: 590_000, random: () => 0.99 }));
    expect(d).toMatchObject({ action: 'retry', delayMs: 10_000 });
  });

  it('asks the budget only for errors that would otherwise be retried, and dead-letters on denial', async () => {
    const gate = budget(false);
    expect(await decide(ctx({ budget: gate }))).toMatchObject({
      action: 'dead-letter',
      reason: 'budget-exhausted',
    });
    expect(gate.asked).toBe(1);
  });

  it("defers past the budget's window without charging an attempt when the gate says so", async () => {
    const d = await decide(ctx({ budget: budget(false, 'defer'), random: () => 0.5 }));
    expect(d).toMatchObject({
      action: 'retry',
      chargesAttempt: false,
      cause: 'budget-deferred',
      delayMs: 75_000,
    });
  });

  it('waits for an open breaker to half-open, charging the attempt that ran, without asking the budget', async () => {
    const gate = budget(true);
    const d = await decide(ctx({ breaker: openBreaker(30_000), budget: gate, random: () => 0.5 }));
    expect(d).toMatchObject({
      action: 'retry',
      chargesAttempt: true,
      cause: 'breaker-open',
      delayMs: 31_000,
    });
    expect(gate.asked).toBe(0);
  });

  it('dead-letters on an open breaker when the policy says so, or when half-open is past max age', async () => {
    const strict: RetryPolicy = { ...policy, whenBreakerOpen: 'dead-letter' };
    expect(await decide(ctx({ policy: strict, breaker: openBreaker(30_000) }))).toMatchObject({
      action: 'dead-letter',
      reason: 'breaker-open',
    });
    expect(await decide(ctx({ breaker: openBreaker(3_600_000) }))).toMatchObject({
      action: 'dead-letter',
      reason: 'breaker-open',
    });
  });

  it('a half-open breaker lets the retry through to the budget', async () => {
    const gate = budget(true);
    const d = await decide(ctx({ breaker: { check: async () => ({ state: 'half-open' }) }, budget: gate }));
    expect(d).toMatchObject({ action: 'retry', chargesAttempt: true });
    expect(gate.asked).toBe(1);
  });

  it('an open breaker never lets a job run past maxAttempts', async () => {
    expect(await decide(ctx({ attemptsMade: 5, breaker: openBreaker(30_000) }))).toMatchObject({
      action: 'dead-letter',
      reason: 'max-attempts',
    });
  });

  it("waits the breaker's own measure of the time to half-open, whatever the worker's clock says", async () => {
    // The store's clock says 1 000 000; this worker's clock runs 40 s fast.
    const skewed: BreakerGate = {
      check: () => ({ state: 'open', halfOpenAtMs: 1_030_000, halfOpenInMs: 30_000 }),
    };
    const d = await decide(
      ctx({ breaker: skewed, nowMs: 1_040_000, createdAtMs: 1_000_000, random: () => 0.5 }),
    );
    expect(d).toMatchObject({ action: 'retry', cause: 'breaker-open', delayMs: 31_000 });
    const refused = new BrokenCircuitError('search', 1_030_000, 'open', 30_000);
    const r = await decide(
      ctx({ error: refused, nowMs: 1_040_000, createdAtMs: 1_000_000, random: () => 0.5 }),
    );
    expect(r).toMatchObject({ action: 'retry', chargesAttempt: false, delayMs: 31_000 });
  });

  describe('a call the breaker refused', () => {
    it('waits for half-open without charging an attempt or spending the budget, even on the last attempt', async () => {
      const gate = budget(true);
      const refused = new BrokenCircuitError('search', 30_000, 'open');
      const d = await decide(ctx({ error: refused, attemptsMade: 5, budget: gate, random: () => 0.5 }));
      expect(d).toMatchObject({
        action: 'retry',
        chargesAttempt: false,
        cause: 'breaker-open',
        delayMs: 31_000,
      });
      expect(gate.asked).toBe(0);
    });

    it('half-open with every probe slot taken waits the backoff delay, uncharged', async () => {
      const gate = budget(false);
      const refused = new Error('wrapped', {
        cause: new BrokenCircuitError('search', undefined, 'half-open'),
      });
      const d = await decide(ctx({ error: refused, attemptsMade: 2, budget: gate }));
      expect(d).toMatchObject({
        action: 'retry',
        chargesAttempt: false,
        cause: 'breaker-open',
        delayMs: 4_000,
      });
      expect(gate.asked).toBe(0);
    });

    it('still dead-letters past the max age or when the policy says so', async () => {
      const late = new BrokenCircuitError('search', 3_600_000, 'open');
      expect(await decide(ctx({ error: late }))).toMatchObject({
        action: 'dead-letter',
        reason: 'breaker-open',
      });
      const strict: RetryPolicy = { ...policy, whenBreakerOpen: 'dead-letter' };
      const soon = new BrokenCircuitError('search', 1_000, 'open');
      expect(await decide(ctx({ policy: strict, error: soon }))).toMatchObject({
        action: 'dead-letter',
        reason: 'breaker-open',
      });
    });
  });

  describe('Retry-After', () => {
    const throttled = (seconds: number) => ({ status: 429, headers: { 'retry-after': String(seconds) } });

    it('never retries sooner than the server asked', async () => {
      expect(await decide(ctx({ error: throttled(30) }))).toMatchObject({
        delayMs: 30_000,
        cause: 'retry-after',
      });
      expect(await decide(ctx({ error: throttled(1), attemptsMade: 3 }))).toMatchObject({
        delayMs: 8_000,
        cause: 'backoff',
      });
    });

    it('above the bound: dead-letter by default, or wait when the policy says so', async () => {
      const bound = {
        ...policy,
        maxAgeMs: undefined,
        retryAfter: { maxMs: 60_000, onExceeded: 'dead-letter' as const },
      };
      expect(await decide(ctx({ policy: bound, error: throttled(120) }))).toMatchObject({
        action: 'dead-letter',
        reason: 'retry-after-too-long',
      });
      const patient = { ...bound, retryAfter: { maxMs: 60_000, onExceeded: 'wait' as const } };
      expect(await decide(ctx({ policy: patient, error: throttled(120) }))).toMatchObject({
        action: 'retry',
        delayMs: 120_000,
      });
    });

    it('a Retry-After past max age dead-letters with max-age', async () => {
      const patient = { ...policy, retryAfter: { maxMs: 3_600_000, onExceeded: 'wait' as const } };
      expect(await decide(ctx({ policy: patient, error: throttled(900) }))).toMatchObject({
        reason: 'max-age',
      });
    });

    it('reads an HTTP-date against ctx.nowMs', async () => {
      const nowMs = Date.UTC(2026, 5, 1);
      const error = { status: 503, headers: { 'retry-after': new Date(nowMs + 45_000).toUTCString() } };
      expect(await decide(ctx({ error, nowMs, createdAtMs: nowMs }))).toMatchObject({ delayMs: 45_000 });
    });

    it('honours a TransientError retryAfterMs', async () => {
      const error = new TransientError('slow down', { retryAfterMs: 20_000 });
      expect(await decide(ctx({ error }))).toMatchObject({ delayMs: 20_000, cause: 'retry-after' });
    });
  });

  it('a key-required policy gives a job without a key one attempt only', async () => {
    const keyed = definePolicy({ maxAttempts: 4, idempotency: 'key-required' });
    expect(await decide(ctx({ policy: keyed }))).toMatchObject({
      action: 'dead-letter',
      reason: 'no-idempotency-key',
    });
    expect(await decide(ctx({ policy: keyed, hasIdempotencyKey: true }))).toMatchObject({ action: 'retry' });
    const single = definePolicy({ maxAttempts: 1, idempotency: 'key-required' });
    expect(await decide(ctx({ policy: single }))).toMatchObject({ reason: 'max-attempts' });
  });

  it('turns terminal decisions into fail where there is no dead-letter target', async () => {
    expect(await decide(ctx({ attemptsMade: 5, hasDeadLetterTarget: false }))).toMatchObject({
      action: 'fail',
      reason: 'max-attempts',
    });
  });

  it('passes the previous delay to decorrelated jitter', () => {
    const dec = { ...policy, jitter: 'decorrelated' as const };
    expect(decideSync(ctx({ policy: dec, previousDelayMs: 10_000, random: () => 0.5 }))).toMatchObject({
      delayMs: 16_000, // 2000 + 0.5 × (30000 − 2000)
    });
  });

  it('rejects a nonsensical attempt count', async () => {
    await expect(decide(ctx({ attemptsMade: 0 }))).rejects.toThrow(/attemptsMade must be an integer >= 1/);
  });

  it('decideSync agrees with decide when there are no gates', async () => {
    for (let attemptsMade = 1; attemptsMade <= 5; attemptsMade++)
      expect(decideSync(ctx({ attemptsMade }))).toEqual(await decide(ctx({ attemptsMade })));
  });
});

describe('decide (properties)', () => {
  const errors = [
    reset,
    new PermanentError('no'),
    new TransientError('yes'),
    { status: 503 },
    { status: 404 },
    { status: 429, headers: { 'retry-after': '30' } },
    new Error('mystery'),
  ];

  it('never retries past maxAttempts or maxAge, and never retries a permanent error', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 12 }),
        fc.option(fc.integer({ min: 1_000, max: 3_600_000 }), { nil: undefined }),
        fc.integer({ min: 0, max: 4_000_000 }),
        fc.constantFrom('none', 'full', 'equal', 'decorrelated' as const),
        fc.constantFrom(...errors),
        fc.boolean(),
        fc.integer(),
        async (maxAttempts, attemptsMade, maxAgeMs, nowMs, jitter, error, retryUnknown, seed) => {
          const p = definePolicy({ maxAttempts, maxAgeMs, jitter, retryUnknown });
          const d = await decide(ctx({ policy: p, error, attemptsMade, nowMs, random: seededRandom(seed) }));
          if (d.action !== 'retry') return;
          expect(attemptsMade).toBeLessThan(maxAttempts);
          expect(error).not.toBeInstanceOf(PermanentError);
          expect(d.classification.retryable).toBe(true);
          expect(d.delayMs).toBeGreaterThanOrEqual(0);
          if (maxAgeMs !== undefined) expect(nowMs + d.delayMs).toBeLessThanOrEqual(maxAgeMs);
        },
      ),
      { numRuns: 300 },
    );
  });
});
