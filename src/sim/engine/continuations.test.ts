import { describe, expect, it } from 'vitest';
import { Continuations } from './continuations.js';

/** A real chain: `fn` runs as the last of `turns` promise reactions started now. */
function chain(turns: number, fn: () => void): Promise<void> {
  let p = Promise.resolve();
  for (let i = 1; i < turns; i++) p = p.then(() => {});
  return p.then(fn);
}

describe('Continuations', () => {
  it('runs synchronously in the order real promise chains of the same lengths run', async () => {
    const real: string[] = [];
    await Promise.all([
      chain(2, () => real.push('a')),
      chain(1, () => real.push('b')),
      chain(3, () => real.push('c')),
      chain(2, () => {
        real.push('d');
        void chain(1, () => real.push('e'));
      }),
    ]);
    await chain(3, () => {});
    const emulated: string[] = [];
    const c = new Continuations();
    c.after(2, () => emulated.push('a'));
    c.after(1, () => emulated.push('b'));
    c.after(3, () => emulated.push('c'));
    c.after(2, () => {
      emulated.push('d');
      c.after(1, () => emulated.push('e'));
    });
    c.run();
    expect(emulated).toEqual(real);
    expect(emulated).toEqual(['b', 'a', 'd', 'c', 'e']);
  });

  it('keeps its place among real chains started after beforePromise', async () => {
    const real: string[] = [];
    const chains = [chain(2, () => real.push('queued')), chain(1, () => real.push('promise'))];
    chains.push(chain(1, () => real.push('after')));
    await Promise.all(chains);
    const emulated: string[] = [];
    const c = new Continuations();
    c.after(2, () => emulated.push('queued'));
    c.beforePromise();
    const started = chain(1, () => emulated.push('promise'));
    c.after(1, () => emulated.push('after'));
    expect(c.inFlight).toBe(2);
    await Promise.all([started, c.drained()]);
    c.settled();
    expect(emulated).toEqual(real);
    expect(emulated).toEqual(['promise', 'after', 'queued']);
  });

  it('hands an error thrown in the microtask queue to settled', async () => {
    const c = new Continuations();
    c.beforePromise();
    c.after(1, () => {
      throw new Error('broken continuation');
    });
    await c.drained();
    expect(() => c.settled()).toThrow('broken continuation');
  });
});
