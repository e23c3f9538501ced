import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { definePolicy } from '../define-policy.js';
import { classify } from './classify.js';
import { classifyRedis } from './redis.js';

const reply = (message: string): Error => new (ReplyError as new (message: string) => Error)(message);
const policy = definePolicy({ maxAttempts: 3, retryUnknown: false });

describe('classifyRedis', () => {
  it.each([
    ['CLUSTERDOWN The cluster is down', 'redis-CLUSTERDOWN'],
    ['TRYAGAIN Multiple keys request during rehashing of slot', 'redis-TRYAGAIN'],
    ['LOADING Redis is loading the dataset in memory', 'redis-LOADING'],
    ['MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no', 'redis-MASTERDOWN'],
    ["READONLY You can't write against a read only replica.", 'redis-READONLY'],
    ['BUSY Redis is busy running a script.', 'redis-BUSY'],
    ['NOREPLICAS Not enough good replicas to write.', 'redis-NOREPLICAS'],
  ])('retries the reply %j', (message, reason) => {
    expect(classifyRedis(reply(message))).toEqual({ retryable: true, reason, family: 'network' });
  });

  it.each([
    ['WRONGTYPE Operation against a key holding the wrong kind of value'],
    ['ERR syntax error'],
    ['NOSCRIPT No matching script.'],
  ])('leaves the reply %j to the other rules', (message) => {
    expect(classifyRedis(reply(message))).toBeUndefined();
    expect(classify(reply(message), policy, 0)).toEqual({ retryable: false, reason: 'unknown' });
  });

  it('retries what ioredis throws while a cluster fails over', () => {
    const maxRetries = Object.defineProperty(new Error('Reached the max retries per request limit'), 'name', {
      value: 'MaxRetriesPerRequestError',
    });
    const allFailed = Object.defineProperty(new Error('Failed to refresh slots cache.'), 'name', {
      value: 'ClusterAllFailedError',
    });
    expect(classifyRedis(new Error('Connection is closed.'))?.reason).toBe('redis-connection-closed');
    expect(
      classifyRedis(
        new Error('Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down'),
      )?.reason,
    ).toBe('redis-redirections');
    expect(classifyRedis(maxRetries)?.reason).toBe('redis-max-retries');
    expect(classifyRedis(allFailed)?.reason).toBe('redis-cluster-failed');
    expect(classifyRedis(new Error('Connection is closed'))).toBeUndefined();
  });

  it('is a built-in rule: a failover error is retried even with retryUnknown false, and through a cause', () => {
    const wrapped = new Error('idempotency check failed', {
      cause: reply('CLUSTERDOWN The cluster is down'),
    });
    expect(classify(wrapped, policy, 0)).toEqual({
      retryable: true,
      reason: 'redis-CLUSTERDOWN',
      family: 'network',
    });
    const networkOnly = definePolicy({ maxAttempts: 3, retryOn: ['http-5xx'] });
    expect(classify(reply('CLUSTERDOWN The cluster is down'), networkOnly, 0).retryable).toBe(false);
  });
});
