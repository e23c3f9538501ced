import { describe, expect, it } from 'vitest';
import { KeyBatches } from './key-batches.js';

/** A send function whose calls are answered by hand, in the order the test chooses. */
function manualSend() {
  const calls: { keys: string[]; answer: (values: string[]) => void; fail: (error: Error) => void }[] = [];
  const send = (keys: string[]) =>
    new Promise<string[]>((resolve, reject) => calls.push({ keys, answer: resolve, fail: reject }));
  return { calls, send };
}

describe('KeyBatches', () => {
  it('sends the first request at once and those asked meanwhile together in the next command', async () => {
    const { calls, send } = manualSend();
    const batches = new KeyBatches(send);
    const first = batches.request('{t}', 'a');
    const later = ['b', 'c', 'b'].map((key) => batches.request('{t}', key));
    expect(calls.map((c) => c.keys)).toEqual([['a']]);
    calls[0]?.answer(['A']);
    expect(await first).toBe('A');
    expect(calls.map((c) => c.keys)).toEqual([['a'], ['b', 'c']]);
    calls[1]?.answer(['B', 'C']);
    expect(await Promise.all(later)).toEqual(['B', 'C', 'B']);
  });

  it('keeps each hash tag apart', () => {
    const { calls, send } = manualSend();
    const batches = new KeyBatches(send);
    void batches.request('{t}', 'a');
    void batches.request('{u}', 'b');
    expect(calls.map((c) => c.keys)).toEqual([['a'], ['b']]);
  });

  it('rejects every request of a failed command, and the next request sends again', async () => {
    const { calls, send } = manualSend();
    const batches = new KeyBatches(send);
    const first = batches.request('{t}', 'a');
    const second = batches.request('{t}', 'b');
    calls[0]?.fail(new Error('connection lost'));
    await expect(first).rejects.toThrow('connection lost');
    calls[1]?.fail(new Error('still down'));
    await expect(second).rejects.toThrow('still down');
    const third = batches.request('{t}', 'c');
    expect(calls.at(-1)?.keys).toEqual(['c']);
    calls.at(-1)?.answer(['C']);
    expect(await third).toBe('C');
  });
});
