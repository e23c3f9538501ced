import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../common/clock.js';
import { MemoryFlowStore } from '../flow-control/memory-store.js';
import { LimitController, type LimitControllerSettings } from './controller.js';
import type { LimitEvents } from './events.js';
import type { LimitsByDependency, LimitsOptions } from './options.js';
import type { LimitExchange, LimitStore } from './store.js';

/** A memory store whose exchanges are recorded. */
function recordingStore(clock: FakeClock) {
  const store = new MemoryFlowStore({ clock });
  const exchanges: LimitExchange[] = [];
  const exchangeLimits = store.exchangeLimits.bind(store);
  store.exchangeLimits = (dependency, request) => {
    exchanges.push(request);
    return exchangeLimits(dependency, request);
  };
  const reads: string[] = [];
  const limitState = store.limitState.bind(store);
  store.limitState = (dependency) => {
    reads.push(dependency);
    return limitState(dependency);
  };
  return { store, exchanges, reads };
}

/**
 * Waits in the controller are on the fake clock: each sleep moves it on by what was asked, so a wait
 * "happens" at once and the test reads exact times.
 */
function setup(
  limits: LimitsByDependency,
  options: Omit<LimitsOptions, 'store'> = {},
  settings: Partial<LimitControllerSettings> = {},
) {
  const clock = new FakeClock(1_000_000);
  const { store, exchanges, reads } = recordingStore(clock);
  const events: Array<{ event: keyof LimitEvents; payload: unknown }> = [];
  const errors: unknown[] = [];
  const sleeps: number[] = [];
  const controller = new LimitController(limits, options, {
    queue: 'index',
    store,
    clock,
    random: () => 0,
    emit: (event, payload) => events.push({ event, payload }),
    internalError: (error) => errors.push(error),
    retryAfterMaxMs: 60_000,
    holder: 'host:1:1',
    sleep: async (ms) => {
      sleeps.push(ms);
      clock.advance(ms);
    },
    ...settings,
  });
  return { clock, store, exchanges, reads, events, errors, sleeps, controller };
}

describe('LimitController', () => {
  it('folds the takes of one turn into one exchange, and the give-backs of one turn into the next', async () => {
    const { controller, exchanges, store } = setup({ openai: { maxInFlight: 25 } });
    const answers = await Promise.all(Array.from({ length: 20 }, () => controller.acquire('openai', 1)));
    expect(exchanges).toHaveLength(1);
    expect(exchanges[0]?.take).toHaveLength(20);
    expect(exchanges[0]?.declared).toEqual({ maxInFlight: 25 });
    expect(exchanges[0]?.holder).toBe('host:1:1');
    expect((await store.limitState('openai')).inFlight).toBe(20);
    expect(controller.status()).toMatchObject([{ dependency: 'openai', inFlight: 20 }]);
    for (const answer of answers) if (answer.type === 'slot') controller.release(answer.slot, true);
    await controller.stop();
    expect(exchanges).toHaveLength(2);
    expect(exchanges[1]?.give).toHaveLength(20);
    expect((await store.limitState('openai')).inFlight).toBe(0);
  });

  it('a call refused by the in-flight cap gets the slot a give-back of this process frees, in the same exchange', async () => {
    // Polls never end here: only the give-back wakes the waiting call.
    const { controller, exchanges, events } = setup(
      { openai: { maxInFlight: 2 } },
      {},
      { sleep: () => new Promise<void>(() => {}) },
    );
    const [a, b] = await Promise.all([controller.acquire('openai'), controller.acquire('openai')]);
    const waiting = controller.acquire('openai');
    await vi.waitFor(() => expect(exchanges).toHaveLength(2));
    expect(exchanges[1]?.take).toHaveLength(1);
    if (a?.type !== 'slot' || b?.type !== 'slot') throw new Error('expected two slots');
    controller.release(a.slot, true);
    const third = await waiting;
    expect(third.type).toBe('slot');
    // The give-back and the waiting take went in one exchange.
    const last = exchanges[exchanges.length - 1];
    expect(last?.give).toEqual([{ lease: a.slot.lease, ok: true }]);
    expect(last?.take).toHaveLength(1);
    expect(events).toEqual([
      {
        event: 'limit-wait',
        payload: { queue: 'index', dependency: 'openai', by: 'in-flight', waitedMs: 0, outcome: 'granted' },
      },
    ]);
  });

  it('waits for the rate pacer’s next slot within maxPaceWaitMs, and holds when it is further', async () => {
    const { controller, events, sleeps } = setup({ crm: { maxRatePerSecond: 4 } }, { maxPaceWaitMs: 1_000 });
    expect((await controller.acquire('crm')).type).toBe('slot');
    const second = await controller.acquire('crm');
    expect(second.type).toBe('slot');
    // 250 ms to the next slot, plus the 1 ms margin (the random source says 0: no jitter).
    expect(sleeps).toEqual([251]);
    expect(events[0]?.payload).toEqual({
      queue: 'index',
      dependency: 'crm',
      by: 'rate',
      waitedMs: 251,
      outcome: 'granted',
    });

    const slow = setup({ crm: { maxRatePerSecond: 0.5 } }, { maxPaceWaitMs: 1_000 });
    expect((await slow.controller.acquire('crm')).type).toBe('slot');
    expect(await slow.controller.acquire('crm')).toEqual({
      type: 'held',
      dependency: 'crm',
      by: 'rate',
      retryInMs: 2_000,
    });
    expect(slow.sleeps).toEqual([]);
    expect(slow.events[0]?.payload).toMatchObject({ by: 'rate', waitedMs: 0, outcome: 'held' });
  });

  it('holds a call the in-flight cap keeps past maxPaceWaitMs, polling meanwhile, slower after each refusal', async () => {
    const { controller, sleeps, events } = setup({ openai: { maxInFlight: 1 } }, { maxPaceWaitMs: 1_000 });
    expect((await controller.acquire('openai')).type).toBe('slot');
    expect(await controller.acquire('openai')).toEqual({
      type: 'held',
      dependency: 'openai',
      by: 'in-flight',
      retryInMs: 0,
    });
    // 50 ms, doubling to 400 ms, cut at the deadline.
    expect(sleeps).toEqual([50, 100, 200, 400, 250]);
    expect(events[0]?.payload).toMatchObject({ by: 'in-flight', waitedMs: 1_000, outcome: 'held' });
  });

  it('a poll that is granted a slot brings the poll back to 50 ms', async () => {
    const { controller, store, sleeps } = setup({ openai: { maxInFlight: 1 } }, { maxPaceWaitMs: 1_000 });
    const first = await controller.acquire('openai');
    if (first.type !== 'slot') throw new Error('the first call gets the slot');
    // The slot's holder is another worker's as far as this one can tell: the store frees it after 3 polls.
    let polls = 0;
    const exchange = store.exchangeLimits.bind(store);
    store.exchangeLimits = (dependency, request) => {
      if (request.take.length > 0 && ++polls === 4)
        exchange(dependency, {
          ...request,
          take: [],
          give: [{ lease: first.slot.lease as string, ok: true }],
        });
      return exchange(dependency, request);
    };
    expect((await controller.acquire('openai')).type).toBe('slot');
    expect(sleeps).toEqual([50, 100, 200]);
    expect((await controller.acquire('openai')).type).toBe('held');
    expect(sleeps.slice(3, 5)).toEqual([50, 100]);
  });

  it('calls the in-flight cap keeps waiting ask again together, one exchange per poll, not one each', async () => {
    const { controller, exchanges, sleeps } = setup({ openai: { maxInFlight: 1 } }, { maxPaceWaitMs: 120 });
    expect((await controller.acquire('openai')).type).toBe('slot');
    const answers = await Promise.all(Array.from({ length: 20 }, () => controller.acquire('openai')));
    expect(answers.every((a) => a.type === 'held' && a.by === 'in-flight')).toBe(true);
    // The first slot's take, the twenty refused together, then the lane's poll at 50 ms, one exchange for
    // all twenty. The next poll, 100 ms on (refused twice in a row), is cut to the 70 ms left: the first
    // waiter's sleep moves the fake clock on at once, so the others find their deadline passed and only
    // it asks again.
    expect(exchanges.map((e) => e.take.length)).toEqual([1, 20, 20, 1]);
    expect(sleeps).toEqual([50, 70]);
  });

  it('waiters whose jittered polls differ still ask together, at the lane’s poll, until their deadline', async () => {
    // Timers that fire only when the test moves the clock to them, earliest first.
    const timers: Array<{ at: number; fire: () => void }> = [];
    let n = 0;
    const { controller, exchanges, clock } = setup(
      { openai: { maxInFlight: 1 } },
      { maxPaceWaitMs: 1_000 },
      {
        // Each waiter draws its own jitter, the first the largest: 0.9, 0.8, …, 0, 0.9, …
        random: () => 0.9 - (n++ % 10) / 10,
        sleep: (ms) => new Promise<void>((fire) => timers.push({ at: clock.now() + ms, fire })),
      },
    );
    expect((await controller.acquire('openai')).type).toBe('slot');
    let settled = false;
    const waiting = Promise.all(Array.from({ length: 20 }, () => controller.acquire('openai'))).finally(
      () => {
        settled = true;
      },
    );
    for (let turn = 0; !settled && turn < 1_000; turn++) {
      // Let exchanges (sent on the next turn of the event loop) and their answers go through.
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      timers.sort((a, b) => a.at - b.at);
      const next = timers.shift();
      if (next === undefined) continue;
      clock.advance(Math.max(0, next.at - clock.now()));
      next.fire();
    }
    const answers = await waiting;
    expect(answers.every((a) => a.type === 'held')).toBe(true);
    // The first slot's take, then one exchange of all twenty per poll: none alone on a timer of its own.
    expect(exchanges.map((e) => e.take.length)).toEqual([1, ...Array(exchanges.length - 1).fill(20)]);
    expect(exchanges.length).toBeLessThanOrEqual(8);
  });

  it('counts the calls waiting for a slot in its status, until each is granted or held', async () => {
    const sleeps: Array<() => void> = [];
    const { controller } = setup(
      { openai: { maxInFlight: 1 } },
      { maxPaceWaitMs: 1_000 },
      { sleep: () => new Promise<void>((fire) => sleeps.push(fire)) },
    );
    const first = await controller.acquire('openai');
    if (first.type !== 'slot') throw new Error('the first call gets the slot');
    const waitingNow = () => controller.status().find((s) => s.dependency === 'openai')?.waiting;
    expect(waitingNow()).toBe(0);
    const second = controller.acquire('openai');
    const third = controller.acquire('openai');
    await vi.waitFor(() => expect(waitingNow()).toBe(2));
    // The slot comes back: a waiting call of this process is woken at once and takes it.
    controller.release(first.slot, true);
    expect((await Promise.race([second, third])).type).toBe('slot');
    await vi.waitFor(() => expect(waitingNow()).toBe(1));
    controller.holdWaits();
    expect((await Promise.all([second, third])).map((a) => a.type).sort()).toEqual(['held', 'slot']);
    expect(waitingNow()).toBe(0);
  });

  it('a dependency with no limit in force costs one state read per stateCacheMs and no exchange', async () => {
    const { controller, exchanges, reads, clock } = setup({}, { stateCacheMs: 250 });
    for (let i = 0; i < 5; i++) expect((await controller.acquire('mail')).type).toBe('slot');
    expect(reads).toEqual(['mail']);
    clock.advance(250);
    await controller.acquire('mail');
    expect(reads).toEqual(['mail', 'mail']);
    expect(exchanges).toEqual([]);
    expect(controller.isLimited('mail')).toBe(false);
  });

  it('an operator’s pause of a dependency the code does not limit holds its calls within stateCacheMs', async () => {
    const { controller, store, clock } = setup({}, { stateCacheMs: 250 });
    expect((await controller.acquire('mail')).type).toBe('slot');
    await store.overrideLimits('mail', { paused: true, reason: 'vendor incident', by: 'ops' });
    clock.advance(250);
    expect(await controller.acquire('mail')).toEqual({
      type: 'held',
      dependency: 'mail',
      by: 'paused',
      retryInMs: 0,
    });
    expect(controller.isLimited('mail')).toBe(true);
    await store.overrideLimits('mail', undefined);
    clock.advance(250);
    const answer = await controller.acquire('mail');
    expect(answer).toMatchObject({ type: 'slot', slot: { lease: undefined } });
  });

  it('a 429 with Retry-After holds the dependency fleet-wide; capped, it marks the dependency down', async () => {
    const { controller, store, events, clock } = setup(
      { openai: { maxInFlight: 5 } },
      { maxPaceWaitMs: 1_000 },
      { retryAfterMaxMs: 2_000 },
    );
    const tooMany = Object.assign(new Error('429'), { status: 429, headers: { 'retry-after': '1' } });
    expect(await controller.noteFailure('openai', tooMany)).toBe(true);
    expect((await store.limitState('openai')).hold?.untilMs).toBe(1_001_000);
    expect(store.read('openai').down).toBe(false);

    const longer = { response: { status: 503, headers: { 'Retry-After': '30' } } };
    expect(await controller.noteFailure('openai', new Error('wrapped', { cause: longer }))).toBe(true);
    expect((await store.limitState('openai')).hold?.untilMs).toBe(1_002_000);
    expect(store.read('openai').down).toBe(true);
    expect(events.map((e) => e.payload)).toEqual([
      { queue: 'index', dependency: 'openai', forMs: 1_000, reason: 'retry-after', capped: false },
      { queue: 'index', dependency: 'openai', forMs: 2_000, reason: 'retry-after', capped: true },
    ]);
    // Held: the hold ends later than maxPaceWaitMs.
    expect(await controller.acquire('openai')).toEqual({
      type: 'held',
      dependency: 'openai',
      by: 'hold',
      retryInMs: 2_000,
    });
    // Then one probe at a time until one succeeds.
    clock.advance(2_000);
    const probe = await controller.acquire('openai');
    if (probe.type !== 'slot') throw new Error('expected the probe to get a slot');
    expect(await controller.acquire('openai')).toMatchObject({ type: 'held', by: 'in-flight' });
    controller.release(probe.slot, true);
    await controller.stop();
    expect((await store.limitState('openai')).probing).toBe(false);
  });

  it('does not hold for errors without Retry-After, other statuses, or a dependency without limits', async () => {
    const { controller, store } = setup({ openai: { maxInFlight: 5 } });
    expect(await controller.noteFailure('openai', { status: 429 })).toBe(false);
    expect(await controller.noteFailure('openai', { status: 500, headers: { 'retry-after': '5' } })).toBe(
      false,
    );
    expect(await controller.noteFailure('mail', { status: 429, headers: { 'retry-after': '5' } })).toBe(
      false,
    );
    expect((await store.limitState('openai')).hold).toBeUndefined();
    expect((await store.limitState('mail')).hold).toBeUndefined();
  });

  it('probes as many calls at once after a hold as the breaker’s halfOpenProbes', async () => {
    const { controller, clock } = setup({ openai: {} }, {}, { probesFor: () => 2 });
    await controller.noteFailure('openai', { status: 429, headers: { 'retry-after': '1' } });
    clock.advance(1_000);
    const answers = await Promise.all([1, 2, 3].map(() => controller.acquire('openai')));
    expect(answers.map((a) => a.type)).toEqual(['slot', 'slot', 'held']);
  });

  it('holds a job of the queue’s own dependency by pausing the queue, any other by delaying it', async () => {
    const paused: number[] = [];
    const { controller } = setup(
      {},
      {},
      { queueDependency: 'search', pauseQueue: (forMs) => void paused.push(forMs) },
    );
    expect(
      controller.holdAction({ type: 'held', dependency: 'mail', by: 'in-flight', retryInMs: 0 }),
    ).toEqual({
      type: 'delay',
      forMs: 250,
    });
    expect(controller.holdAction({ type: 'held', dependency: 'mail', by: 'rate', retryInMs: 20 })).toEqual({
      type: 'delay',
      forMs: 50,
    });
    expect(
      controller.holdAction({ type: 'held', dependency: 'mail', by: 'hold', retryInMs: 60_000 }),
    ).toEqual({ type: 'delay', forMs: 5_000 });
    expect(controller.holdAction({ type: 'held', dependency: 'search', by: 'paused', retryInMs: 0 })).toEqual(
      {
        type: 'pause',
        forMs: 1_000,
      },
    );
    await vi.waitFor(() => expect(paused).toEqual([1_000]));
  });

  it('renews the leases of running calls every leaseMs / 3, so they outlive their first lease', async () => {
    const { controller, store, exchanges, clock } = setup({ openai: { maxInFlight: 5, leaseMs: 300 } });
    const answer = await controller.acquire('openai');
    if (answer.type !== 'slot') throw new Error('expected a slot');
    clock.advance(250);
    await vi.waitFor(
      () => expect(exchanges.some((e) => e.renew.includes(answer.slot.lease ?? ''))).toBe(true),
      {
        timeout: 5_000,
      },
    );
    clock.advance(250);
    expect((await store.limitState('openai')).inFlight).toBe(1);
    controller.release(answer.slot, true);
    await controller.stop();
    expect((await store.limitState('openai')).inFlight).toBe(0);
  });

  it('lets calls go ahead while the store cannot be reached, at most maxInFlight at once in this process, and says so once', async () => {
    const failing: LimitStore = {
      exchangeLimits: () => Promise.reject(new Error('store down')),
      holdLimits: () => Promise.reject(new Error('store down')),
      overrideLimits: () => Promise.reject(new Error('store down')),
      limitState: () => Promise.reject(new Error('store down')),
      limitedDependencies: () => Promise.reject(new Error('store down')),
    };
    const { controller, errors } = setup(
      { openai: { maxInFlight: 2 }, crm: { maxRatePerSecond: 5 } },
      { maxPaceWaitMs: 300 },
      { store: failing },
    );
    const first = await controller.acquire('openai');
    const second = await controller.acquire('openai');
    expect([first.type, second.type]).toEqual(['slot', 'slot']);
    // A third would be a third call at once from this process alone: it waits, then the job is held.
    expect(await controller.acquire('openai')).toEqual({
      type: 'held',
      dependency: 'openai',
      by: 'in-flight',
      retryInMs: 0,
    });
    if (first.type === 'slot') controller.release(first.slot, true);
    expect((await controller.acquire('openai')).type).toBe('slot');
    // No in-flight cap in code: nothing to keep locally, the calls go ahead.
    const crm = await Promise.all([1, 2, 3].map(() => controller.acquire('crm')));
    expect(crm).toEqual(
      [1, 2, 3].map(() => ({ type: 'slot', slot: { dependency: 'crm', lease: undefined, cost: 0 } })),
    );
    expect(errors.map((e) => (e as Error).message)).toEqual(['store down', 'store down']);
  });

  it('keeps enforcing limits while flow control is switched off fleet-wide', async () => {
    const { controller, store } = setup({ openai: { maxInFlight: 1 } }, { maxPaceWaitMs: 0 });
    store.setOff(true);
    expect((await controller.acquire('openai')).type).toBe('slot');
    expect(await controller.acquire('openai')).toMatchObject({ type: 'held', by: 'in-flight' });
  });

  it('validates its options, naming the field', () => {
    expect(() => setup({ openai: { maxInFlight: 0 } })).toThrow(/openai\.maxInFlight: 0 is invalid/);
    expect(() => setup({ '': { maxInFlight: 1 } })).toThrow(/dependency name must not be empty/);
    expect(() => setup({ openai: { leaseMs: 10 } })).toThrow(/leaseMs: 10 is invalid/);
    expect(() => setup({}, { stateCacheMs: -1 })).toThrow(/stateCacheMs: -1 is invalid/);
  });
});
