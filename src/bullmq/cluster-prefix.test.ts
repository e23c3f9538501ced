import { describe, expect, it } from 'vitest';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import { assertClusterPrefix, clusterPrefixProblem } from './cluster-prefix.js';

describe('clusterPrefixProblem', () => {
  it.each([
    ['{bull}', 'mail'],
    ['bull', '{mail}'],
    ['{app}:bull', 'mail'],
    ['app{shop}', 'mail:eu'],
    ['{a}', '{b}'],
    ['bull', 'x{mail}y'],
  ])('accepts prefix %j with queue %j', (prefix, queue) => {
    expect(clusterPrefixProblem(prefix, queue)).toBeUndefined();
  });

  it.each([
    ['bull', 'mail', '{bull}'],
    ['myapp', 'mail', '{myapp}'],
    // An empty tag is no tag: Redis hashes the whole key.
    ['{}bull', 'mail', '{bull}'],
    ['{}', 'mail', '{bull}'],
    // A brace left open closes in the key's suffix or job id, so every key gets its own slot.
    ['bull{', 'mail', '{bull}'],
    ['bull', '{mail', '{bull}'],
    ['bull}', '{mail', '{bull}'],
  ])('refuses prefix %j with queue %j and names %j', (prefix, queue, suggestion) => {
    const problem = clusterPrefixProblem(prefix, queue);
    expect(problem).toContain(`BullMQ prefix ${JSON.stringify(prefix)} with queue ${JSON.stringify(queue)}`);
    expect(problem).toContain('CROSSSLOT');
    expect(problem).toContain(`use the prefix "${suggestion}"`);
  });

  it('suggests a prefix that it accepts', () => {
    for (const prefix of ['bull', 'a}b{c', '{}', 'x{']) {
      const suggestion = /use the prefix "([^"]+)"/.exec(clusterPrefixProblem(prefix, 'mail') ?? '')?.[1];
      expect(suggestion).toBeDefined();
      expect(clusterPrefixProblem(suggestion!, 'mail')).toBeUndefined();
    }
  });
});

describe('assertClusterPrefix', () => {
  it('throws an InvalidInputError naming a prefix that works', () => {
    let error: unknown;
    try {
      assertClusterPrefix('bull', 'mail');
    } catch (e) {
      error = e;
    }
    expect(isInvalidInputError(error)).toBe(true);
    expect((error as Error).message).toMatch(/use the prefix "\{bull\}"/);
    expect(() => assertClusterPrefix('{bull}', 'mail')).not.toThrow();
  });
});
