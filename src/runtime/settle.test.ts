import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Classification, Decision } from '../policy/types.js';
import type { AttemptState } from './contracts.js';
import { type SettleJob, settle } from './settle.js';

const network: Classification = { retryable: true, reason: 'ETIMEDOUT', family: 'network' };

const job: SettleJob = Object.freeze({
  ref: { queue: 'index', jobId: '42', createdAt: 1_000 },
  name: 'reindex',
  data: { docId: 42 },
  opts: { priority: 3 },
  starts: 3,
  dependency: 'search',
  lastError: { name: 'Error', message: 'connect ETIMEDOUT', stack: 'Error: connect ETIMEDOUT\n    at x' },
  replays: 0,
});

const retry = (
  delayMs: number,
  chargesAttempt: boolean,
  cause: Extract<Decision, { action: 'retry' }>['cause'],
) => ({ action: 'retry', delayMs, retry: 2, chargesAttempt, cause, classification: network }) as const;

describe('settle', () => {
  it('a charged retry counts the attempt, remembers its delay and the first failure, and is due after the delay', () => {
    expect(
      settle({ attempts: 0, deferrals: 0 }, retry(200, true, 'backoff'), 10_000, { ...job, starts: 1 }),
    ).toEqual({
      state: {
        attempts: 1,
        deferrals: 0,
        starts: 1,
        previousDelayMs: 200,
        firstFailedAt: 10_000,
        granted: true,
      },
      action: { type: 'retry', delayMs: 200, dueAtMs: 10_200, retry: 2, cause: 'backoff' },
    });
  });

  it('a later charged retry keeps the first failure time and replaces the previous delay', () => {
    const state: AttemptState = {
      attempts: 2,
      deferrals: 1,
      starts: 2,
      previousDelayMs: 400,
      firstFailedAt: 5_000,
    };
    expect(settle(state, retry(800, true, 'retry-after'), 20_000, job)).toEqual({
      state: {
        attempts: 3,
        deferrals: 1,
        starts: 3,
        previousDelayMs: 800,
        firstFailedAt: 5_000,
        granted: true,
      },
      action: { type: 'retry', delayMs: 800, dueAtMs: 20_800, retry: 2, cause: 'retry-after' },
    });
  });

  it('a deferral gives the attempt back, counts a deferral and keeps the previous delay for the jitter', () => {
    const state: AttemptState = {
      attempts: 2,
      deferrals: 0,
      starts: 2,
      previousDelayMs: 400,
      firstFailedAt: 5_000,
    };
    expect(settle(state, retry(30_000, false, 'breaker-open'), 20_000, job)).toEqual({
      state: { attempts: 2, deferrals: 1, starts: 3, previousDelayMs: 400, firstFailedAt: 5_000 },
      action: { type: 'defer', delayMs: 30_000, dueAtMs: 50_000, retry: 2, cause: 'breaker-open' },
    });
    expect(settle({ attempts: 0, deferrals: 3 }, retry(60_000, false, 'budget-deferred'), 7, job)).toEqual({
      state: { attempts: 0, deferrals: 4, starts: 3, firstFailedAt: 7 },
      action: { type: 'defer', delayMs: 60_000, dueAtMs: 60_007, retry: 2, cause: 'budget-deferred' },
    });
  });

  it('a dead-letter charges the attempt and files the full record, dead-lettered now', () => {
    const state: AttemptState = {
      attempts: 4,
      deferrals: 2,
      starts: 6,
      previousDelayMs: 1_600,
      firstFailedAt: 2_000,
    };
    const decision: Decision = {
      action: 'dead-letter',
      reason: 'max-attempts',
      detail: '5 of 5 attempts made',
      classification: network,
    };
    const keyed: SettleJob = { ...job, starts: 7, idempotencyKey: 'doc-42', replays: 1, replayedFrom: '17' };
    expect(settle(state, decision, 90_000, keyed)).toEqual({
      state: { attempts: 5, deferrals: 2, starts: 7, previousDelayMs: 1_600, firstFailedAt: 2_000 },
      action: {
        type: 'dead-letter',
        record: {
          queue: 'index',
          jobId: '42',
          createdAt: 1_000,
          name: 'reindex',
          data: { docId: 42 },
          opts: { priority: 3 },
          reason: 'max-attempts',
          detail: '5 of 5 attempts made',
          lastError: {
            name: 'Error',
            message: 'connect ETIMEDOUT',
            stack: 'Error: connect ETIMEDOUT\n    at x',
            classification: network,
          },
          attemptsMade: 5,
          dependency: 'search',
          idempotencyKey: 'doc-42',
          firstFailedAt: 2_000,
          deadLetteredAt: 90_000,
          replays: 1,
          replayedFrom: '17',
        },
      },
    });
  });

  it('a first failure that is dead-lettered at once failed first at the same time, and a record without a key has none', () => {
    const permanent: Classification = { retryable: false, reason: 'permanent-error' };
    const { state, action } = settle(
      { attempts: 0, deferrals: 0 },
      {
        action: 'dead-letter',
        reason: 'permanent',
        detail: 'permanent-error is not retryable',
        classification: permanent,
      },
      3_000,
      { ...job, starts: 1 },
    );
    expect(state).toEqual({ attempts: 1, deferrals: 0, starts: 1, firstFailedAt: 3_000 });
    expect(action.type === 'dead-letter' && action.record).toMatchObject({
      attemptsMade: 1,
      firstFailedAt: 3_000,
      deadLetteredAt: 3_000,
      lastError: { classification: permanent },
    });
    expect(action.type === 'dead-letter' && Object.keys(action.record)).not.toContain('idempotencyKey');
    expect(action.type === 'dead-letter' && Object.keys(action.record)).not.toContain('replayedFrom');
  });

  it('a fail says why in one line, with the last error', () => {
    expect(
      settle(
        { attempts: 1, deferrals: 0, firstFailedAt: 100 },
        {
          action: 'fail',
          reason: 'max-age',
          detail: 'the next retry could not start before the max age of 1m',
          classification: network,
        },
        60_100,
        job,
      ),
    ).toEqual({
      state: { attempts: 2, deferrals: 0, starts: 3, firstFailedAt: 100 },
      action: {
        type: 'fail',
        reason: 'max-age',
        detail: 'the next retry could not start before the max age of 1m',
        message:
          'max-age: the next retry could not start before the max age of 1m; last error: connect ETIMEDOUT',
      },
    });
  });

  it('never changes the state it is given', () => {
    const state: AttemptState = Object.freeze({
      attempts: 1,
      deferrals: 1,
      previousDelayMs: 10,
      firstFailedAt: 1,
    });
    settle(state, retry(20, true, 'backoff'), 2, job);
    settle(state, retry(20, false, 'breaker-open'), 2, job);
    expect(state).toEqual({ attempts: 1, deferrals: 1, previousDelayMs: 10, firstFailedAt: 1 });
  });

  it('over any run of decisions, each settlement accounts for exactly one failed attempt, charged or deferred', () => {
    const decisions = fc.array(
      fc.oneof(
        fc
          .record({ delayMs: fc.nat(1_000_000), charged: fc.boolean() })
          .map(({ delayMs, charged }) => retry(delayMs, charged, charged ? 'backoff' : 'breaker-open')),
      ),
      { maxLength: 40 },
    );
    fc.assert(
      fc.property(decisions, fc.nat(1_000_000), (run, start) => {
        let state: AttemptState = { attempts: 0, deferrals: 0 };
        let now = start;
        let charged = 0;
        for (const [i, decision] of run.entries()) {
          const { state: next, action } = settle(state, decision, now, { ...job, starts: i + 1 });
          if (decision.chargesAttempt) charged++;
          expect(next.attempts + next.deferrals).toBe(i + 1);
          expect(next.attempts).toBe(charged);
          expect(next.firstFailedAt).toBe(start);
          expect(action).toMatchObject({ dueAtMs: now + decision.delayMs });
          state = next;
          now += decision.delayMs;
        }
      }),
    );
  });
});
