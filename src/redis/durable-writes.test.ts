import type { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import { resolveDurableWrites } from './durable-writes.js';

const cluster = { isCluster: true } as unknown as Cluster;
const single = {} as unknown as Redis;

describe('resolveDurableWrites', () => {
  it('waits for one replica for up to a second on a Cluster, and not at all on a single Redis', () => {
    expect(resolveDurableWrites(cluster, undefined)).toEqual({
      replicas: 1,
      timeoutMs: 1_000,
      ifReplicated: true,
    });
    expect(resolveDurableWrites(single, undefined)).toBeUndefined();
  });

  it('follows the option whatever the client', () => {
    expect(resolveDurableWrites(cluster, false)).toBeUndefined();
    expect(resolveDurableWrites(single, true)).toEqual({ replicas: 1, timeoutMs: 1_000 });
    expect(resolveDurableWrites(single, { replicas: 2 })).toEqual({ replicas: 2, timeoutMs: 1_000 });
    expect(resolveDurableWrites(cluster, { timeoutMs: 250 })).toEqual({ replicas: 1, timeoutMs: 250 });
  });

  it.each([
    [{ replicas: 0 }, 'durableWrites.replicas: 0 is invalid'],
    [{ timeoutMs: 0 }, 'durableWrites.timeoutMs: 0 is invalid'],
    [{ timeoutMs: 1.5 }, 'durableWrites.timeoutMs: 1.5 is invalid'],
  ])('refuses %j, naming the field', (option, message) => {
    let error: unknown;
    try {
      resolveDurableWrites(cluster, option);
    } catch (e) {
      error = e;
    }
    expect(isInvalidInputError(error)).toBe(true);
    expect((error as Error).message).toContain(message);
  });
});
