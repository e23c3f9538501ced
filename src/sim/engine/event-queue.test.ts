import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../common/random.js';
import { EventQueue } from './event-queue.js';

describe('EventQueue', () => {
  it('pops events in time order, ties in the order they were pushed', () => {
    const queue = new EventQueue(2);
    const random = seededRandom(3);
    const pushed: [number, number][] = [];
    for (let i = 0; i < 5_000; i++) {
      const time = Math.floor(random() * 200); // many ties
      queue.push(time, i);
      pushed.push([time, i]);
    }
    const expected = [...pushed].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const popped: [number, number][] = [];
    while (queue.size > 0) {
      const time = queue.peekTime();
      popped.push([time, queue.pop()]);
    }
    expect(popped).toEqual(expected);
    expect(queue.peekTime()).toBe(Number.POSITIVE_INFINITY);
  });

  it('interleaves pushes and pops like a sorted list', () => {
    const queue = new EventQueue(4);
    const random = seededRandom(11);
    const reference: [number, number][] = [];
    let seq = 0;
    for (let round = 0; round < 2_000; round++) {
      if (reference.length === 0 || random() < 0.6) {
        const time = random() * 1_000;
        queue.push(time, seq);
        reference.push([time, seq++]);
        reference.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      } else {
        const [time, payload] = reference.shift()!;
        expect(queue.peekTime()).toBe(time);
        expect(queue.pop()).toBe(payload);
      }
    }
    expect(queue.size).toBe(reference.length);
  });

  it('refuses to pop an empty queue', () => {
    expect(() => new EventQueue().pop()).toThrow(/empty/);
  });
});
