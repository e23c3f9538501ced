import { describe, expect, it } from 'vitest';
import { FakeClock } from './clock.js';
import { firstLineOf } from './error-text.js';
import { EventBus } from './events.js';
import { seededRandom, uniform } from './random.js';

describe('seededRandom', () => {
  it('repeats the same sequence for the same seed and differs for another', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const c = seededRandom(43);
    const seqA = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(seqA);
    expect(Array.from({ length: 5 }, c)).not.toEqual(seqA);
  });

  it('stays in [0, 1) and covers the interval evenly', () => {
    const random = seededRandom(1);
    const bins = [0, 0, 0, 0];
    for (let i = 0; i < 40_000; i++) {
      const x = random();
      expect(x >= 0 && x < 1).toBe(true);
      bins[Math.floor(x * 4)]!++;
    }
    for (const count of bins) expect(Math.abs(count - 10_000)).toBeLessThan(500);
  });

  it('rejects a non-integer seed', () => {
    expect(() => seededRandom(1.5)).toThrow(/integer/);
  });

  it('uniform maps into the range', () => {
    expect(uniform(() => 0, 10, 20)).toBe(10);
    expect(uniform(() => 0.5, 10, 20)).toBe(15);
  });
});

describe('FakeClock', () => {
  it('moves only when told and never backwards', () => {
    const clock = new FakeClock(100);
    expect(clock.now()).toBe(100);
    expect(clock.advance(50)).toBe(150);
    clock.set(200);
    expect(clock.now()).toBe(200);
    expect(() => clock.set(199)).toThrow(/backwards/);
    expect(() => clock.advance(-1)).toThrow(/>= 0/);
  });
});

describe('EventBus', () => {
  type Events = { granted: { dependency: string }; denied: { n: number } };

  it('delivers to subscribers until disposed', () => {
    const bus = new EventBus<Events>();
    const seen: string[] = [];
    const sub = bus.on('granted', (e) => seen.push(e.dependency));
    bus.emit('granted', { dependency: 'search' });
    sub.dispose();
    bus.emit('granted', { dependency: 'mail' });
    expect(seen).toEqual(['search']);
    expect(bus.has('granted')).toBe(false);
  });

  it('once fires a single time', () => {
    const bus = new EventBus<Events>();
    let count = 0;
    bus.once('denied', () => count++);
    bus.emit('denied', { n: 1 });
    bus.emit('denied', { n: 2 });
    expect(count).toBe(1);
  });

  it('a throwing listener is reported and does not stop the others or the caller', () => {
    const errors: unknown[] = [];
    const bus = new EventBus<Events>((e) => errors.push(e));
    const seen: number[] = [];
    bus.on('denied', () => {
      throw new Error('broken hook');
    });
    bus.on('denied', (e) => seen.push(e.n));
    expect(() => bus.emit('denied', { n: 7 })).not.toThrow();
    expect(seen).toEqual([7]);
    expect(errors).toHaveLength(1);
  });
});

describe('firstLineOf', () => {
  it('keeps the first line of a message and drops a trailing colon', () => {
    expect(firstLineOf(new Error('bad at line 2, column 1:\n\na: [1\n^'))).toBe('bad at line 2, column 1');
    expect(firstLineOf('plain')).toBe('plain');
  });
});
