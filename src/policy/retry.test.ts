import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import { seededRandom } from '../common/random.js';
import { PermanentError } from '../errors/permanent-error.js';
import { TransientError } from '../errors/transient-error.js';
import { definePolicy } from './define-policy.js';
import { type RetryEvent, type RetryOptions, retry } from './retry.js';
import type { BudgetGate } from './types.js';

const policy = definePolicy({
  name: 'crm',
  maxAttempts: 4,
  maxAgeMs: '1m',
  jitter: 'none',
  backoff: { type: 'exponential', baseMs: '1s', maxDelayMs: '30s' },
});

/** A clock and a sleep that advances it: no real waiting. */
function virtualTime(): Required<Pick<RetryOptions, 'sleep' | 'random'>> & {
  clock: FakeClock;
  slept: number[];
} {
  const clock = new FakeClock(1_000_000);
  const slept: number[] = [];
  return {
    clock,
    random: seededRandom(3),
    slept,
    sleep: async (ms) => {
      slept.push(ms);
      clock.advance(ms);
    },
  };
}

/** A function failing with `errors` in turn, then returning 'ok'. */
function flaky(...errors: unknown[]) {
  let calls = 0;
  const fn = async () => {
    const error = errors[calls++];
    if (error !== undefined) throw error;
    return 'ok';
  };
  return Object.assign(fn, { calls: () => calls });
}

const reset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

describe('retry', () => {
  it('retries transient failures on the backoff and returns the result', async () => {
    const time = virtualTime();
    const events: RetryEvent[] = [];
    const fn = flaky(reset(), reset());
    await expect(retry(fn, policy, { ...time, onRetry: (e) => void events.push(e) })).resolves.toBe('ok');
    expect(fn.calls()).toBe(3);
    expect(time.slept).toEqual([1_000, 2_000]);
    expect(events.map((e) => [e.attempt, e.decision.retry, e.decision.delayMs])).toEqual([
      [1, 1, 1_000],
      [2, 2, 2_000],
    ]);
  });

  it('passes the attempt number and the signal to fn', async () => {
    const seen: number[] = [];
    await retry(
      ({ attempt, signal }) => {
        seen.push(attempt);
        expect(signal.aborted).toBe(false);
        if (attempt < 2) throw reset();
        return attempt;
      },
      policy,
      virtualTime(),
    );
    expect(seen).toEqual([1, 2]);
  });

  it('stops at maxAttempts and rethrows the last error', async () => {
    const time = virtualTime();
    const last = reset();
    const fn = flaky(reset(), reset(), reset(), last);
    await expect(retry(fn, policy, time)).rejects.toBe(last);
    expect(fn.calls()).toBe(4);
  });

  it('never retries a permanent error or an unknown one (retryUnknown false)', async () => {
    const fatal = new PermanentError('bad request');
    const fn = flaky(fatal);
    await expect(retry(fn, policy, virtualTime())).rejects.toBe(fatal);
    expect(fn.calls()).toBe(1);
    await expect(retry(flaky(new Error('?')), policy, virtualTime())).rejects.toThrow('?');
  });

  it("honours the server's Retry-After", async () => {
    const time = virtualTime();
    await retry(flaky(new TransientError('busy', { retryAfterMs: 7_000 })), policy, time);
    expect(time.slept).toEqual([7_000]);
  });

  it('gives up at maxAge, measured from the call', async () => {
    const time = virtualTime();
    const slow = async () => {
      time.clock.advance(25_000);
      throw reset();
    };
    await expect(retry(slow, policy, time)).rejects.toThrow('socket hang up');
    // attempt 1 ends at 25 s, waits 1 s; attempt 2 ends at 51 s and 2 s more still fits; attempt 3 ends past 1 m
    expect(time.slept).toEqual([1_000, 2_000]);
  });

  it('rejects with the abort reason mid-wait, promptly', async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    let attempts = 0;
    const never = () => new Promise<void>(() => {});
    const run = retry(
      () => {
        attempts++;
        throw reset();
      },
      policy,
      { ...virtualTime(), signal: controller.signal, sleep: never, onRetry: () => controller.abort(reason) },
    );
    await expect(run).rejects.toBe(reason);
    expect(attempts).toBe(1);
  });

  it('rejects with the abort reason during an attempt that ignores the signal', async () => {
    const controller = new AbortController();
    const run = retry(() => new Promise(() => controller.abort('stop')), policy, {
      ...virtualTime(),
      signal: controller.signal,
    });
    await expect(run).rejects.toBe('stop');
  });

  it('leaves no listener on a long-lived signal after its waits', async () => {
    const controller = new AbortController();
    const quick = definePolicy({ maxAttempts: 3, jitter: 'none', backoff: { type: 'fixed', delayMs: 1 } });
    // The default sleep: a real 1 ms timer per retry.
    expect(await retry(flaky(reset(), reset()), quick, { signal: controller.signal })).toBe('ok');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('does not start when the signal is already aborted', async () => {
    const fn = flaky();
    await expect(retry(fn, policy, { signal: AbortSignal.abort('early') })).rejects.toBe('early');
    expect(fn.calls()).toBe(0);
  });

  it('a budget deferral does not use up an attempt; a denial ends the call', async () => {
    const time = virtualTime();
    let spends = 0;
    const deferOnce: BudgetGate = {
      onExhausted: 'defer',
      trySpend: () => ({ granted: spends++ > 0, windowMs: 5_000 }),
    };
    const fn = flaky(reset(), reset(), reset());
    await expect(retry(fn, policy, { ...time, budget: deferOnce, dependency: 'crm' })).resolves.toBe('ok');
    expect(fn.calls()).toBe(4); // one free execution plus three charged ones
    const denied: BudgetGate = { trySpend: () => ({ granted: false, windowMs: 5_000 }) };
    const once = flaky(reset());
    await expect(retry(once, policy, { ...virtualTime(), budget: denied })).rejects.toThrow('socket hang up');
    expect(once.calls()).toBe(1);
  });

  it('a key-required policy retries only when the call has an idempotency key', async () => {
    const keyed = definePolicy({ maxAttempts: 3, idempotency: 'key-required', jitter: 'none' });
    await expect(retry(flaky(reset()), keyed, virtualTime())).rejects.toThrow();
    await expect(retry(flaky(reset()), keyed, { ...virtualTime(), hasIdempotencyKey: true })).resolves.toBe(
      'ok',
    );
  });
});
