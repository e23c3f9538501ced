import { describe, expect, it } from 'vitest';
import type { Clock } from '../common/clock.js';
import { FakeClock } from '../common/clock.js';
import { isClaimLostError } from '../errors/claim-lost-error.js';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import { isTransientError } from '../errors/transient-error.js';
import { idempotencyGuard } from './guard.js';
import { MemoryIdempotencyStore } from './memory-store.js';

/** A memory store on `clock`; `waited(n)` settles once it has told callers to wait `n` times. */
function watchedStore(clock: FakeClock) {
  const store = new MemoryIdempotencyStore({ clock });
  let waits = 0;
  const listeners: Array<{ n: number; resolve: () => void }> = [];
  const begin = store.begin.bind(store);
  store.begin = async (...args) => {
    const claim = await begin(...args);
    if (claim.state === 'wait') {
      waits += 1;
      for (const l of listeners) if (waits >= l.n) l.resolve();
    }
    return claim;
  };
  return {
    store,
    waits: () => waits,
    waited: (n: number) =>
      new Promise<void>((resolve) => (waits >= n ? resolve() : listeners.push({ n, resolve }))),
  };
}

describe('IdempotencyGuard on an injected clock', () => {
  it('gives up with a TransientError once waitTimeoutMs has passed on its clock, not before', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const { store, waits, waited } = watchedStore(clock);
    await store.begin('charge:1', 'busy-worker', 600_000);
    const guard = idempotencyGuard({
      store,
      clock,
      inFlightTtlMs: 600_000,
      waitTimeoutMs: 60_000,
      pollMs: 1,
    });
    let runs = 0;
    const attempt = guard.once('charge:1', () => ++runs);
    await waited(1);
    clock.advance(59_999);
    // Two more polls on a clock 1 ms short of the bound: the guard kept waiting after the first.
    await waited(waits() + 2);
    clock.advance(1);
    await expect(attempt).rejects.toSatisfy(
      (e: unknown) => isTransientError(e) && /after 60000ms; retry later/.test((e as Error).message),
    );
    expect(runs).toBe(0);
  });

  it("runs the work once a crashed caller's claim has expired on the store's clock", async () => {
    const clock = new FakeClock(0);
    const { store, waited } = watchedStore(clock);
    await store.begin('mail:7', 'crashed-worker', 30_000);
    const guard = idempotencyGuard({ store, clock, inFlightTtlMs: 30_000, pollMs: 1 });
    const attempt = guard.run('mail:7', () => 'sent');
    await waited(1);
    clock.advance(30_000);
    expect(await attempt).toEqual({ value: 'sent', ran: true });
    expect(await guard.run('mail:7', () => 'again')).toEqual({ value: 'sent', ran: false });
  });

  it('work that outlives its claim (a blocked event loop) while another caller runs it is reported, never silent', async () => {
    const clock = new FakeClock(0);
    const store = new MemoryIdempotencyStore({ clock });
    const first = idempotencyGuard({ store, clock, inFlightTtlMs: 30_000 });
    const second = idempotencyGuard({ store, clock, inFlightTtlMs: 30_000 });
    const seen: string[] = [];
    first.events.on('claim-lost', (e) => seen.push(`claim-lost:${e.key}:${e.detectedBy}`));
    first.events.on('duplicate-run', (e) => seen.push(`duplicate-run:${e.key}`));
    let sends = 0;
    let unblock!: () => void;
    const blocked = new Promise<void>((resolve) => (unblock = resolve));
    const slow = first.run('charge:9', async () => {
      await blocked; // no renewal reaches the store meanwhile (the fake clock jumps past the claim)
      sends++;
      return 'first receipt';
    });
    await expect.poll(() => store.begin('charge:9', 'probe', 1)).toMatchObject({ state: 'wait' });
    clock.advance(30_000);
    expect(await second.run('charge:9', () => ++sends && 'second receipt')).toEqual({
      value: 'second receipt',
      ran: true,
    });
    unblock();
    const error = await slow.catch((e: unknown) => e);
    expect(isClaimLostError(error)).toBe(true);
    expect(error).toMatchObject({ key: 'charge:9', value: 'first receipt' });
    expect((error as Error).message).toMatch(/^idempotency key "charge:9": .*may have run twice/);
    expect(isTransientError(error)).toBe(true);
    expect(sends).toBe(2);
    expect(seen).toEqual(['claim-lost:charge:9:finish', 'duplicate-run:charge:9']);
    // The job's retry gets the stored outcome: no third run.
    expect(await first.run('charge:9', () => ++sends)).toEqual({ value: 'second receipt', ran: false });
    expect(sends).toBe(2);
  });

  it('a renewal that comes too late emits claim-lost and aborts the work, which can stop before its side effect', async () => {
    const clock = new FakeClock(0);
    const store = new MemoryIdempotencyStore({ clock });
    const guard = idempotencyGuard({ store, clock, inFlightTtlMs: 30 });
    const lost: string[] = [];
    guard.events.on('claim-lost', (e) => lost.push(`${e.key}:${e.detectedBy}`));
    const run = guard.run('mail:3', async ({ signal }) => {
      clock.advance(31); // the claim expires before the first renewal (every 10 ms) reaches the store
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      throw signal.reason;
    });
    const error = await run.catch((e: unknown) => e);
    expect(isClaimLostError(error)).toBe(true);
    expect(lost).toEqual(['mail:3:renewal']);
  });

  it('an outcome that cannot be stored is returned, and reported as not stored', async () => {
    const store = new MemoryIdempotencyStore();
    store.finish = () => Promise.reject(new Error('store gone'));
    const guard = idempotencyGuard({ store, outcomeRetryDelayMs: 0 });
    const notStored: string[] = [];
    guard.events.on('outcome-not-stored', (e) =>
      notStored.push(`${e.key}:${(e.error as Error).message}:${e.attempts}`),
    );
    expect(await guard.run('mail:4', () => 'sent')).toEqual({ value: 'sent', ran: true });
    expect(notStored).toEqual(['mail:4:store gone:3']);
  });

  it('refuses a clock without now()', () => {
    const store = new MemoryIdempotencyStore();
    let error: unknown;
    try {
      idempotencyGuard({ store, clock: {} as Clock });
    } catch (e) {
      error = e;
    }
    expect(isInvalidInputError(error) && (error as Error).message).toMatch(/clock.*now\(\)/);
  });
});
