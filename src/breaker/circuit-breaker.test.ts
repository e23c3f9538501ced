import { describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import { BrokenCircuitError, isBrokenCircuitError } from '../errors/broken-circuit-error.js';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import { PermanentError } from '../errors/permanent-error.js';
import { isTransientError, TransientError } from '../errors/transient-error.js';
import { isValidationError } from '../errors/validation-error.js';
import { decide } from '../policy/decide.js';
import { definePolicy } from '../policy/define-policy.js';
import { CircuitBreaker } from './circuit-breaker.js';
import { MemoryBreakerStore } from './memory-store.js';
import type { BreakerEvents, BreakerStore } from './types.js';

const T0 = 1_000_000;

function setup(options: ConstructorParameters<typeof CircuitBreaker>[0] = {}) {
  const clock = new FakeClock(T0);
  const breaker = new CircuitBreaker({ clock, consecutiveFailures: 2, coolDownMs: 1_000, ...options });
  const seen: string[] = [];
  breaker.events.on('state-change', (e) => seen.push(`${e.dependency}:${e.from}>${e.to}:${e.reason}`));
  breaker.events.on('rejected', (e) => seen.push(`${e.dependency}:rejected:${e.state}:${e.halfOpenAtMs}`));
  return { clock, breaker, seen };
}

describe('CircuitBreaker', () => {
  it('opens, refuses with a rejected event, half-opens and closes, reporting each change once', async () => {
    const { clock, breaker, seen } = setup({ halfOpenProbes: 1, successesToClose: 1 });
    await breaker.recordFailure('search');
    await breaker.recordFailure('search');
    expect(await breaker.check('search')).toEqual({
      state: 'open',
      halfOpenAtMs: T0 + 1_000,
      halfOpenInMs: 1_000,
    });
    expect((await breaker.acquire('search')).allowed).toBe(false);
    clock.advance(1_000);
    const probe = await breaker.acquire('search');
    expect(probe.probe).toBe(true);
    expect((await breaker.acquire('search')).allowed).toBe(false);
    await breaker.recordSuccess('search', probe);
    expect(await breaker.check('search')).toEqual({ state: 'closed' });
    expect(seen).toEqual([
      'search:closed>open:consecutive-failures',
      `search:rejected:open:${T0 + 1_000}`,
      'search:open>half-open:cool-down-elapsed',
      `search:rejected:half-open:${T0 + 1_000}`,
      'search:half-open>closed:probes-succeeded',
    ]);
  });

  it('a call admitted while closed that succeeds during half-open is no probe: it neither closes the breaker nor frees a slot', async () => {
    const { clock, breaker } = setup({ halfOpenProbes: 1, successesToClose: 2 });
    let finishEarly!: () => void;
    const early = breaker.execute('search', () => new Promise<void>((resolve) => (finishEarly = resolve)));
    await breaker.recordFailure('search');
    await breaker.recordFailure('search');
    clock.advance(1_000);
    let finishProbe!: () => void;
    const probe = breaker.execute('search', () => new Promise<void>((resolve) => (finishProbe = resolve)));
    await expect.poll(() => breaker.state('search').then((s) => s.probesInFlight)).toBe(1);
    finishEarly();
    await early;
    expect(await breaker.state('search')).toMatchObject({ state: 'half-open', probeSuccesses: 0 });
    expect((await breaker.acquire('search')).allowed).toBe(false);
    finishProbe();
    await probe;
    expect(await breaker.state('search')).toMatchObject({ state: 'half-open', probeSuccesses: 1 });
    await breaker.execute('search', () => undefined);
    expect((await breaker.state('search')).state).toBe('closed');
  });

  it("on a clock with fractional milliseconds (the simulator's), probe outcomes still move a half-open breaker", async () => {
    const { clock, breaker, seen } = setup({ halfOpenProbes: 1, successesToClose: 1 });
    clock.set(T0 + 0.375);
    await breaker.recordFailure('search');
    await breaker.recordFailure('search');
    clock.advance(1_000.25);
    const failing = await breaker.acquire('search');
    expect(failing.ticket).toBe(`${T0 + 1_000.625}:1`);
    await breaker.recordFailure('search', failing);
    clock.advance(1_000.5);
    const succeeding = await breaker.acquire('search');
    await breaker.recordSuccess('search', succeeding);
    expect(seen).toEqual([
      'search:closed>open:consecutive-failures',
      'search:open>half-open:cool-down-elapsed',
      'search:half-open>open:probe-failed',
      'search:open>half-open:cool-down-elapsed',
      'search:half-open>closed:probes-succeeded',
    ]);
  });

  it("a worker whose clock is 40 s ahead of the store's still waits the whole cool-down before half-open", async () => {
    const storeClock = new FakeClock(T0);
    const workerClock = new FakeClock(T0 + 40_000);
    const breaker = new CircuitBreaker({
      store: new MemoryBreakerStore({ clock: storeClock }),
      consecutiveFailures: 1,
      coolDownMs: 30_000,
    });
    await breaker.recordFailure('search');
    const policy = definePolicy({ maxAttempts: 5, jitter: 'none', backoff: { type: 'fixed', delayMs: 0 } });
    const ctx = {
      policy,
      error: new TransientError('503'),
      attemptsMade: 1,
      createdAtMs: workerClock.now(),
      nowMs: workerClock.now(),
      random: () => 0,
      dependency: 'search',
    };
    expect(await decide({ ...ctx, breaker })).toMatchObject({ action: 'retry', delayMs: 30_000 });
    const refused = await breaker.execute('search', () => 1).catch((e: unknown) => e);
    expect(await decide({ ...ctx, error: refused })).toMatchObject({ action: 'retry', delayMs: 30_000 });
  });

  it('execute refuses without calling fn, with a BrokenCircuitError carrying the dependency and half-open time', async () => {
    const { breaker } = setup();
    await breaker.recordFailure('crm');
    await breaker.recordFailure('crm');
    let called = false;
    const error = await breaker
      .execute('crm', () => {
        called = true;
      })
      .catch((e: unknown) => e);
    expect(called).toBe(false);
    expect(isBrokenCircuitError(error)).toBe(true);
    expect(error).toMatchObject({ dependency: 'crm', halfOpenAtMs: T0 + 1_000, state: 'open' });
    expect((error as Error).message).toBe(
      `circuit for "crm" is open; it half-opens at ${new Date(T0 + 1_000).toISOString()}`,
    );
    expect(isBrokenCircuitError(new Error('x'))).toBe(false);
    // A refusal is worth trying again later: every classifier sees a transient error.
    expect(isTransientError(error)).toBe(true);
  });

  it('execute returns the value, rethrows the error, and counts permanent errors as the dependency answering', async () => {
    const { breaker } = setup();
    expect(await breaker.execute('mail', async () => 42)).toBe(42);
    for (let i = 0; i < 3; i++) {
      const permanent = new PermanentError('400 bad address');
      await expect(breaker.execute('mail', () => Promise.reject(permanent))).rejects.toBe(permanent);
    }
    expect(await breaker.state('mail')).toMatchObject({ state: 'closed', successes: 4, failures: 0 });
    await expect(breaker.execute('mail', () => Promise.reject(new TransientError('503')))).rejects.toThrow(
      '503',
    );
    await expect(breaker.execute('mail', () => Promise.reject(new TransientError('503')))).rejects.toThrow(
      '503',
    );
    expect((await breaker.state('mail')).state).toBe('open');
  });

  it('execute honours a custom isFailure', async () => {
    const { breaker } = setup();
    const isFailure = () => false;
    for (let i = 0; i < 3; i++)
      await breaker.execute('mail', () => Promise.reject(new Error('x')), { isFailure }).catch(() => {});
    expect((await breaker.state('mail')).state).toBe('closed');
  });

  it('applies per-dependency overrides on top of the shared options', async () => {
    const { breaker } = setup({ dependencies: { payments: { consecutiveFailures: 1 } } });
    expect(breaker.optionsFor('payments')).toMatchObject({ consecutiveFailures: 1, coolDownMs: 1_000 });
    expect(breaker.optionsFor('search').consecutiveFailures).toBe(2);
    await breaker.recordFailure('payments');
    await breaker.recordFailure('search');
    expect((await breaker.state('payments')).state).toBe('open');
    expect((await breaker.state('search')).state).toBe('closed');
  });

  it('lists the dependencies it has an override for or has been asked about', async () => {
    const { breaker } = setup({ dependencies: { payments: { consecutiveFailures: 1 } } });
    expect(await breaker.dependencies()).toEqual(['payments']);
    await breaker.acquire('search');
    await breaker.check('crm');
    expect(await breaker.dependencies()).toEqual(['crm', 'payments', 'search']);
  });

  it('validates options when built, naming the dependency of a bad override', () => {
    expect(() => new CircuitBreaker({ halfOpenProbes: 0 })).toThrow(/halfOpenProbes: 0 is invalid/);
    let error: unknown;
    try {
      new CircuitBreaker({ dependencies: { crm: { coolDownMs: -1 } } });
    } catch (e) {
      error = e;
    }
    expect(isValidationError(error)).toBe(true);
    expect((error as Error).message).toMatch(/^invalid circuit breaker options for "crm": coolDownMs: -1/);
  });

  it('follows the one name rule: spaces are a name, an empty string is not', async () => {
    const { breaker } = setup();
    await expect(breaker.acquire('  ')).resolves.toMatchObject({ allowed: true });
    const error = await breaker.acquire('').catch((e: unknown) => e);
    expect(isInvalidInputError(error)).toBe(true);
    expect((error as Error).message).toMatch(/dependency "": must not be empty/);
  });

  it('a throwing listener does not break the call', async () => {
    const errors: unknown[] = [];
    const { breaker } = setup({ onListenerError: (e) => errors.push(e) });
    breaker.events.on('state-change', () => {
      throw new Error('broken hook');
    });
    await breaker.recordFailure('search');
    await expect(breaker.recordFailure('search')).resolves.toMatchObject({ state: 'open' });
    expect(errors).toHaveLength(1);
  });

  it('emits degraded and recovered when the store starts and stops answering from a fallback', async () => {
    const clock = new FakeClock(T0);
    const shared = new MemoryBreakerStore({ clock });
    const local = new MemoryBreakerStore({ clock, degraded: true });
    let down = false;
    const store: BreakerStore = {
      acquire: (d, o) => (down ? local : shared).acquire(d, o),
      record: (d, outcome, o) => (down ? local : shared).record(d, outcome, o),
      read: (d, o) => (down ? local : shared).read(d, o),
    };
    const breaker = new CircuitBreaker({ store });
    const seen: Array<[keyof BreakerEvents, string]> = [];
    breaker.events.on('degraded', (e) => seen.push(['degraded', e.dependency]));
    breaker.events.on('recovered', (e) => seen.push(['recovered', e.dependency]));
    await breaker.acquire('search');
    down = true;
    await breaker.acquire('search');
    await breaker.acquire('search');
    down = false;
    await breaker.acquire('search');
    expect(seen).toEqual([
      ['degraded', 'search'],
      ['recovered', 'search'],
    ]);
  });

  it('says which store went down and since when, and how long it was down, in the one store-outage shape', async () => {
    const clock = new FakeClock(T0);
    const shared = new MemoryBreakerStore({ clock });
    const local = new MemoryBreakerStore({ clock, degraded: true });
    let down = false;
    const store: BreakerStore = {
      acquire: (d, o) => (down ? local : shared).acquire(d, o),
      record: (d, outcome, o) => (down ? local : shared).record(d, outcome, o),
      read: (d, o) => (down ? local : shared).read(d, o),
    };
    const breaker = new CircuitBreaker({ store, clock });
    const seen: unknown[] = [];
    breaker.events.on('degraded', (e) => seen.push(e));
    breaker.events.on('recovered', (e) => seen.push(e));
    down = true;
    await breaker.acquire('search');
    clock.advance(4_000);
    down = false;
    await breaker.acquire('search');
    expect(seen).toStrictEqual([
      { store: 'breaker', dependency: 'search', since: T0 },
      { store: 'breaker', dependency: 'search', since: T0, downForMs: 4_000 },
    ]);
  });

  it('a half-open refusal with every probe slot taken throws a half-open BrokenCircuitError', async () => {
    const { clock, breaker } = setup({ halfOpenProbes: 1 });
    await breaker.recordFailure('search');
    await breaker.recordFailure('search');
    clock.advance(1_000);
    await breaker.acquire('search');
    const error = await breaker.execute('search', () => 1).catch((e: unknown) => e);
    expect(error).toMatchObject({ dependency: 'search', state: 'half-open', halfOpenAtMs: undefined });
  });

  it('BrokenCircuitError describes a half-open refusal', () => {
    const error = new BrokenCircuitError('search', undefined, 'half-open');
    expect(error.message).toBe('circuit for "search" is half-open and all its probe slots are taken');
    expect(error.name).toBe('BrokenCircuitError');
  });
  it('acquireNow and recordNow answer as acquire and record do, with the same events, on an in-process store', async () => {
    const sync = setup({ halfOpenProbes: 1, successesToClose: 1 });
    const awaited = setup({ halfOpenProbes: 1, successesToClose: 1 });
    const steps: Array<[string, unknown, unknown]> = [];
    const both = async (name: string, now: () => unknown, later: () => Promise<unknown>) =>
      steps.push([name, now(), await later()]);
    await both(
      'failure 1',
      () => sync.breaker.recordNow('search', 'failure'),
      () => awaited.breaker.recordFailure('search'),
    );
    await both(
      'failure 2',
      () => sync.breaker.recordNow('search', 'failure'),
      () => awaited.breaker.recordFailure('search'),
    );
    await both(
      'refused',
      () => sync.breaker.acquireNow('search'),
      () => awaited.breaker.acquire('search'),
    );
    sync.clock.advance(1_000);
    awaited.clock.advance(1_000);
    const probe = sync.breaker.acquireNow('search');
    const awaitedProbe = await awaited.breaker.acquire('search');
    steps.push(['probe', probe, awaitedProbe]);
    await both(
      'probe success',
      () => sync.breaker.recordNow('search', 'success', probe),
      () => awaited.breaker.recordSuccess('search', awaitedProbe),
    );
    for (const [name, now, later] of steps) expect(now, name).toEqual(later);
    expect(probe).toMatchObject({ allowed: true, probe: true, ticket: `${T0 + 1_000}:1` });
    expect(sync.breaker.acquireNow('search')?.snapshot.state).toBe('closed');
    expect(sync.seen).toEqual([
      'search:closed>open:consecutive-failures',
      `search:rejected:open:${T0 + 1_000}`,
      'search:open>half-open:cool-down-elapsed',
      'search:half-open>closed:probes-succeeded',
    ]);
    expect(sync.seen).toEqual(awaited.seen);
  });

  it('acquireNow and recordNow give no answer when the store needs a round trip', () => {
    const clock = new FakeClock(T0);
    const memory = new MemoryBreakerStore({ clock });
    const remote: BreakerStore = {
      acquire: (d, o) => memory.acquire(d, o),
      record: (d, outcome, o) => memory.record(d, outcome, o),
      read: (d, o) => memory.read(d, o),
    };
    const breaker = new CircuitBreaker({ store: remote, clock });
    expect(breaker.acquireNow('search')).toBeUndefined();
    expect(breaker.recordNow('search', 'failure')).toBeUndefined();
  });
});
