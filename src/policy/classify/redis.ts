import type { Classification } from '../types.js';
import { stringField } from './fields.js';

/**
 * Redis error replies that mean "not now" rather than "never": the cluster is down or resharding
 * (`CLUSTERDOWN`, `TRYAGAIN`), a node is loading its data or lost its master (`LOADING`, `MASTERDOWN`), a
 * write reached a master that a failover just demoted (`READONLY`), a script holds the server (`BUSY`), or
 * too few replicas are connected for a write (`NOREPLICAS`). Each shows up for a second or two during a
 * failover; none says anything about the job.
 *
 * @example
 * TRANSIENT_REDIS_REPLIES.has('READONLY'); // true: the write reached a demoted master
 */
export const TRANSIENT_REDIS_REPLIES: ReadonlySet<string> = new Set([
  'CLUSTERDOWN',
  'TRYAGAIN',
  'LOADING',
  'MASTERDOWN',
  'READONLY',
  'BUSY',
  'NOREPLICAS',
]);

/**
 * Classifies Redis availability failures as retryable (`network` family): the error replies above
 * (ioredis `ReplyError`, reason `redis-<REPLY>`), and ioredis's own connection failures: a connection
 * closed under the command (`redis-connection-closed`), a cluster that kept redirecting
 * (`redis-redirections`), no node able to give the slot map (`redis-cluster-failed`), or a command that
 * used up `maxRetriesPerRequest` (`redis-max-retries`). Matched by error name and by ioredis's fixed
 * messages, so no ioredis import is needed. Other Redis replies (`WRONGTYPE`, `NOSCRIPT`, syntax errors)
 * are left to the other rules.
 *
 * @example
 * classifyRedis(Object.assign(new Error('CLUSTERDOWN The cluster is down'), { name: 'ReplyError' }));
 * // { retryable: true, reason: 'redis-CLUSTERDOWN', family: 'network' }
 */
export function classifyRedis(error: unknown): Classification | undefined {
  const name = stringField(error, 'name');
  const message = stringField(error, 'message') ?? '';
  const retry = (reason: string): Classification => ({ retryable: true, reason, family: 'network' });
  if (name === 'ReplyError') {
    const reply = /^[A-Z]+/.exec(message)?.[0];
    return reply !== undefined && TRANSIENT_REDIS_REPLIES.has(reply) ? retry(`redis-${reply}`) : undefined;
  }
  if (name === 'MaxRetriesPerRequestError') return retry('redis-max-retries');
  if (name === 'ClusterAllFailedError') return retry('redis-cluster-failed');
  if (message === 'Connection is closed.') return retry('redis-connection-closed');
  if (message.startsWith('Too many Cluster redirections.')) return retry('redis-redirections');
  return undefined;
}
