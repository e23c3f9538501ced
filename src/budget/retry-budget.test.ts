import { describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import { seededRandom } from '../common/random.js';
import { StoreTimeoutError } from '../common/timeout.js';
import { CorruptBudgetStateError } from '../errors/corrupt-budget-state-error.js';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import { TransientError } from '../errors/transient-error.js';
import { isValidationError } from '../errors/validation-error.js';
import { decide } from '../policy/decide.js';
import { definePolicy } from '../policy/define-policy.js';
import { MemoryBudgetStore } from './memory-store.js';
import type { RetryBudgetOptions } from './options.js';
import { RetryBudget } from './retry-budget.js';
import type { BudgetStore } from './store.js';

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

/** A remote store whose answers the test controls: `hang` never settles, `fail` rejects. */
class ControlledStore implements BudgetStore {
  readonly remote = true;
  behaviour: 'ok' | 'hang' | 'fail' = 'ok';
  readonly inner = new MemoryBudgetStore({ clock: new FakeClock(0) });
  #answer<T>(value: () => T): Promise<T> {
    if (this.behaviour === 'hang') return new Promise(() => {});
    if (this.behaviour === 'fail') return Promise.reject(new Error('connection refused'));
    return Promise.resolve(value());
  }
  trySpend: BudgetStore['trySpend'] = (...a) => this.#answer(() => this.inner.trySpend(...a));
  addSuccesses: BudgetStore['addSuccesses'] = (...a) => this.#answer(() => this.inner.addSuccesses(...a));
  read: BudgetStore['read'] = (...a) => this.#answer(() => this.inner.read(...a));
  dependencies: BudgetStore['dependencies'] = () => this.#answer(() => this.inner.dependencies());
  ping = () => this.#answer(() => undefined);
}

describe('RetryBudget settings', () => {
  const store = new MemoryBudgetStore();
  it.each<[Partial<RetryBudgetOptions>, RegExp]>([
    [{ ratio: 0 }, /ratio: 0 is invalid: must be in \(0, 1\]/],
    [{ ratio: 1.5 }, /ratio: 1.5 is invalid: must be in \(0, 1\]/],
    [{ ratio: Number.NaN }, /ratio/],
    [{ minAllowance: -1 }, /minAllowance: -1 is invalid: the floor must be >= 0/],
    [{ minAllowance: 2.5 }, /minAllowance: 2.5 is invalid: the floor must be a whole number/],
    [{ windowMs: 60_001 }, /windowMs: 60001 is invalid: must be a whole multiple of buckets \(10\)/],
    [{ buckets: 0 }, /buckets: 0 is invalid/],
    [{ mode: 'observe' as never }, /mode/],
    [{ timeoutMs: -5 }, /timeoutMs/],
    [{ ratio: 0.0000015 }, /ratio: 0.0000015 is invalid: must be a whole number of millionths/],
    [{ ratio: 1 / 3 }, /ratio: 0.333.* is invalid: must be a whole number of millionths/],
    [
      { windowMs: 1_000, flushIntervalMs: 250 },
      /flushIntervalMs: 250 is invalid: must be at most a tenth of windowMs \(1000\).*use at most 100/,
    ],
    [{ settingsVersion: -1 }, /settingsVersion: -1 is invalid/],
  ])('rejects %j with a message naming the field and the rule', (bad, message) => {
    const error = errorOf(() => new RetryBudget({ store, ...bad }));
    expect(isValidationError(error)).toBe(true);
    expect(error.message).toMatch(message);
  });

  it('applies a ratio of whole millionths exactly, and flushes at most every tenth of the window', () => {
    expect(new RetryBudget({ store, ratio: 0.000001 }).ratio).toBe(0.000001);
    expect(new RetryBudget({ store }).flushIntervalMs).toBe(250);
    expect(new RetryBudget({ store, windowMs: 1_000 }).flushIntervalMs).toBe(100);
    expect(new RetryBudget({ store, windowMs: 1_000, flushIntervalMs: 100 }).flushIntervalMs).toBe(100);
  });

  it('rejects a missing store', () => {
    expect(() => new RetryBudget({} as RetryBudgetOptions)).toThrow(
      /store: undefined is invalid: must be a budget store/,
    );
  });

  it('applies the documented defaults', () => {
    const budget = new RetryBudget({ store });
    expect([budget.ratio, budget.windowMs, budget.minAllowance, budget.buckets]).toEqual([
      0.2, 60_000, 10, 10,
    ]);
    expect([budget.mode, budget.onExhausted, budget.fallback]).toEqual(['enforce', 'dead-letter', 'local']);
  });

  it.each(['', 'x'.repeat(201), 42])('rejects the dependency name %j', async (name) => {
    const budget = new RetryBudget({ store });
    expect(isInvalidInputError(errorOf(() => budget.recordSuccess(name as string)))).toBe(true);
    await expect(budget.trySpend(name as string)).rejects.toThrow(/dependency .*: must/);
  });

  it.each(['has space', 'a{b}', 'line\nbreak', 'eu:search'])(
    'accepts the dependency name %j (stores encode it)',
    async (name) => {
      const budget = new RetryBudget({ store });
      budget.recordSuccess(name, 100);
      expect(await budget.trySpend(name)).toMatchObject({ dependency: name, granted: true, successes: 100 });
    },
  );

  it('rejects a success count that is not a whole number >= 1', () => {
    const budget = new RetryBudget({ store });
    expect(() => budget.recordSuccess('search', 0)).toThrow(/count must be a whole number >= 1/);
  });
});

describe('RetryBudget with an unreachable store', () => {
  it('says which store went down, since when and why, and how long it was down, in the one store-outage shape', async () => {
    const remote = new ControlledStore();
    const clock = new FakeClock(50_000);
    const budget = new RetryBudget({ store: remote, clock, timeoutMs: 20, probeIntervalMs: 10 });
    const seen: unknown[] = [];
    budget.events.on('degraded', (e) => seen.push(e));
    budget.events.on('recovered', (e) => seen.push(e));
    remote.behaviour = 'hang';
    await budget.trySpend('search');
    clock.advance(3_000);
    remote.behaviour = 'ok';
    await new Promise<void>((resolve) => {
      const poke = setInterval(() => void budget.trySpend('search'), 5);
      budget.events.once('recovered', () => {
        clearInterval(poke);
        resolve();
      });
    });
    expect(seen).toStrictEqual([
      {
        store: 'budget',
        dependency: 'search',
        error: expect.any(StoreTimeoutError),
        since: 50_000,
        mode: 'local',
      },
      { store: 'budget', since: 50_000, downForMs: 3_000 },
    ]);
    await budget.close();
  });
  it('answers from the local floor within the timeout, emits degraded once, and recovers', async () => {
    const remote = new ControlledStore();
    const budget = new RetryBudget({ store: remote, minAllowance: 2, timeoutMs: 20, probeIntervalMs: 10 });
    const events: string[] = [];
    budget.events.on('degraded', (e) => events.push(`degraded:${e.mode}`));
    budget.events.on('recovered', () => events.push('recovered'));
    remote.behaviour = 'hang';
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await budget.trySpend('search'));
    expect(results.map((r) => [r.granted, r.degraded])).toEqual([
      [true, true],
      [true, true],
      [false, true],
      [false, true],
    ]);
    expect(events).toEqual(['degraded:local']);
    remote.behaviour = 'ok';
    await new Promise<void>((resolve) => {
      budget.events.once('recovered', () => resolve());
      const poke = setInterval(() => void budget.trySpend('search'), 5);
      budget.events.once('recovered', () => clearInterval(poke));
    });
    expect((await budget.trySpend('search')).degraded).toBe(false);
    expect(events).toEqual(['degraded:local', 'recovered']);
    await budget.close();
  });

  it('answers every request queued behind a call that timed out from the fallback, once', async () => {
    const remote = new ControlledStore();
    const budget = new RetryBudget({
      store: remote,
      minAllowance: 3,
      timeoutMs: 20,
      probeIntervalMs: 60_000,
    });
    let calls = 0;
    const trySpend = remote.trySpend;
    remote.trySpend = (...a) => {
      calls++;
      return trySpend(...a);
    };
    remote.behaviour = 'hang';
    const results = await Promise.all(Array.from({ length: 5 }, () => budget.trySpend('search')));
    expect(calls).toBe(1);
    expect(results.every((r) => r.degraded)).toBe(true);
    expect(results.map((r) => r.granted)).toEqual([true, true, true, false, false]);
    await budget.close();
  });

  it.each([
    ['deny', false],
    ['allow', true],
  ] as const)('fallback %s answers %s while degraded', async (fallback, granted) => {
    const remote = new ControlledStore();
    remote.behaviour = 'fail';
    const budget = new RetryBudget({ store: remote, fallback, timeoutMs: 20 });
    expect(await budget.trySpend('search')).toMatchObject({ granted, degraded: true });
    expect(await budget.state('search')).toMatchObject({ degraded: true, allowance: 10 });
    await budget.close();
  });

  it('in shadow mode a denying fallback still lets the retry through', async () => {
    const remote = new ControlledStore();
    remote.behaviour = 'fail';
    const budget = new RetryBudget({ store: remote, fallback: 'deny', mode: 'shadow', timeoutMs: 20 });
    expect(await budget.trySpend('search')).toMatchObject({ granted: true, degraded: true });
    await budget.close();
  });

  it('reports each batch of successes that reaches the store, with a flush or riding along with trySpend', async () => {
    const remote = new ControlledStore();
    const budget = new RetryBudget({ store: remote, timeoutMs: 1_000 });
    const flushed: string[] = [];
    budget.events.on('flushed', (e) => flushed.push(`${e.dependency}:${e.successes}`));
    budget.recordSuccess('search', 3);
    budget.recordSuccess('mail', 2);
    await budget.trySpend('search');
    await budget.flush();
    expect(flushed).toEqual(['search:3', 'mail:2']);
    expect((await budget.state('search')).successes).toBe(3);
    await budget.close();
  });

  it.each([
    ['close', (budget: RetryBudget) => budget.close()],
    ['flush', (budget: RetryBudget) => budget.flush()],
  ] as const)('%s waits for a batch of successes the flush timer already sent', async (_name, settle) => {
    const remote = new ControlledStore();
    const budget = new RetryBudget({ store: remote, timeoutMs: 1_000 });
    let land!: () => void;
    const gate = new Promise<void>((resolve) => {
      land = resolve;
    });
    const addSuccesses = remote.addSuccesses;
    remote.addSuccesses = async (...a) => {
      await gate;
      return addSuccesses(...a);
    };
    budget.recordSuccess('search', 7);
    void budget.flush(); // as the flush timer would
    let settled = false;
    const settling = settle(budget).then(() => {
      settled = true;
    });
    // Every microtask has run: a call that did not wait for the batch would have resolved by now.
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    land();
    await settling;
    expect(remote.inner.read('search')?.successes).toBe(7);
    await budget.close();
  });

  it('a failed flush degrades instead of throwing', async () => {
    const remote = new ControlledStore();
    const budget = new RetryBudget({ store: remote, timeoutMs: 20 });
    budget.recordSuccess('search', 5);
    remote.behaviour = 'fail';
    await expect(budget.flush()).resolves.toBeUndefined();
    expect(budget.degraded).toBe(true);
    await budget.close();
  });

  it('a failed or late listing rejects on its own, aborts its scan and leaves the budget on the store', async () => {
    const remote = new ControlledStore();
    const budget = new RetryBudget({ store: remote, timeoutMs: 20, listTimeoutMs: 20 });
    const degraded: unknown[] = [];
    budget.events.on('degraded', (e) => degraded.push(e));
    const signals: AbortSignal[] = [];
    let listing: 'hang' | 'fail' = 'fail';
    remote.dependencies = (options) => {
      if (options?.signal) signals.push(options.signal);
      return listing === 'hang' ? new Promise(() => {}) : Promise.reject(new Error('connection reset'));
    };
    await expect(budget.dependencies()).rejects.toThrow('connection reset');
    listing = 'hang';
    const late = [budget.dependencies(), budget.dependencies()];
    await expect(Promise.all(late)).rejects.toSatisfy(
      (e: unknown) => e instanceof StoreTimeoutError && /listing did not answer within 20ms/.test(e.message),
    );
    expect(signals).toHaveLength(2); // the two concurrent calls shared one listing
    expect(signals[1]?.aborted).toBe(true);
    expect(budget.degraded).toBe(false);
    expect(await budget.trySpend('search')).toMatchObject({ granted: true, degraded: false });
    expect(degraded).toEqual([]);
    await budget.close();
  });
});

describe('RetryBudget and what the store applied', () => {
  it('sends each group of successes with its age on its clock, so the store stamps it with its own time', async () => {
    const clock = new FakeClock(0);
    const store = new ControlledStore();
    const sent: unknown[] = [];
    const add = store.addSuccesses;
    store.addSuccesses = (dependency, successes, window) => {
      sent.push(successes);
      return add(dependency, successes, window);
    };
    // 1 000 ms in 10 buckets: successes within 12 ms (an eighth of a bucket) share a group.
    const budget = new RetryBudget({ store, clock, windowMs: 1_000, log: false });
    budget.recordSuccess('search');
    clock.advance(5);
    budget.recordSuccess('search', 2);
    clock.advance(95);
    budget.recordSuccess('search');
    clock.advance(150);
    await budget.flush();
    expect(sent).toEqual([
      [
        { ageMs: 250, count: 3 },
        { ageMs: 150, count: 1 },
      ],
    ]);
    await budget.close();
  });

  it('reports a dependency whose state the store had to reset once, and degrades nothing', async () => {
    const store = new ControlledStore();
    const spend = store.trySpend;
    let resets = 1;
    store.trySpend = async (...a) => {
      const result = await spend(...a);
      return resets-- > 0 ? { ...result, reset: 'not MessagePack' } : result;
    };
    const logged: string[] = [];
    const budget = new RetryBudget({ store, log: (m) => logged.push(m) });
    const events: string[] = [];
    budget.events.on('reset', (e) => events.push(`${e.dependency}: ${e.reason}`));
    budget.events.on('degraded', () => events.push('degraded'));
    expect(await budget.trySpend('bad')).toMatchObject({ granted: true, degraded: false });
    expect(await budget.trySpend('bad')).toMatchObject({ granted: true, degraded: false });
    expect(await budget.trySpend('good')).toMatchObject({ granted: true, degraded: false });
    expect(events).toEqual(['bad: not MessagePack']);
    expect(logged).toEqual([
      'retry budget state of "bad" could not be read (not MessagePack); it starts afresh, other dependencies are unaffected',
    ]);
    await budget.close();
  });

  it('reports an unreadable state on state() without degrading the budget', async () => {
    const store = new ControlledStore();
    store.read = async (dependency) => {
      throw new CorruptBudgetStateError(dependency, 'malformed settings or counts');
    };
    const budget = new RetryBudget({ store, log: false });
    const events: string[] = [];
    budget.events.on('reset', (e) => events.push(e.dependency));
    budget.events.on('degraded', () => events.push('degraded'));
    expect(await budget.state('bad')).toMatchObject({ allowance: 10, spent: 0, degraded: false });
    expect(budget.degraded).toBe(false);
    expect(events).toEqual(['bad']);
    await budget.close();
  });
});

describe('RetryBudget as the policy budget gate', () => {
  it('decide dead-letters with budget-exhausted once the budget is spent', async () => {
    const budget = new RetryBudget({
      store: new MemoryBudgetStore({ clock: new FakeClock(0) }),
      minAllowance: 1,
    });
    const policy = definePolicy({ name: 'test', maxAttempts: 5, backoff: { type: 'fixed', delayMs: 1_000 } });
    const ctx = {
      policy,
      error: new TransientError('search timed out'),
      attemptsMade: 1,
      createdAtMs: 0,
      nowMs: 0,
      random: seededRandom(1),
      dependency: 'search',
      budget,
    };
    expect((await decide(ctx)).action).toBe('retry');
    const second = await decide(ctx);
    expect(second).toMatchObject({ action: 'dead-letter', reason: 'budget-exhausted' });
  });
});
