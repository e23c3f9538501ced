import { InvalidInputError } from '../errors/invalid-input-error.js';
import { maskCredentials } from './mask-credentials.js';
import { parseRedisUrl, type RedisUrl } from './redis-url.js';

/**
 * What a `--redis` value names: one server (which may still turn out to be a cluster node), or a Redis
 * Cluster given as comma-separated node URLs.
 *
 * @example
 * parseRedisTarget('redis://a:7000,redis://b:7001'); // { kind: 'cluster', nodes: [...], ... }
 */
export type RedisTarget = { kind: 'single'; url: RedisUrl } | ({ kind: 'cluster' } & ClusterSeed);

/**
 * Where a cluster client starts: its seed nodes and what every node shares.
 *
 * @example
 * const seed: ClusterSeed = { nodes: [{ host: '10.0.0.5', port: 7000 }], username: '', password: '', tls: false, shown: 'redis://10.0.0.5:7000' };
 */
export interface ClusterSeed {
  /** The seed nodes, each checked like a single URL. */
  nodes: { host: string; port: number }[];
  /** Credentials and TLS shared by every node. */
  username: string;
  password: string;
  tls: boolean;
  /** The list with passwords masked, for messages. */
  shown: string;
}

/**
 * The cluster seed of checked node URLs that share scheme and credentials (the first one's are taken).
 *
 * @example
 * clusterSeedOf([new URL('redis://10.0.0.5:7000')], 'redis://10.0.0.5:7000').nodes; // [{ host: '10.0.0.5', port: 7000 }]
 */
export function clusterSeedOf(urls: readonly URL[], shown: string): ClusterSeed {
  const [first] = urls;
  return {
    nodes: urls.map((url) => ({
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port === '' ? 6379 : Number(url.port),
    })),
    username: decodeURIComponent(first?.username ?? ''),
    password: decodeURIComponent(first?.password ?? ''),
    tls: first?.protocol === 'rediss:',
    shown,
  };
}

/**
 * Checks a `--redis` value: one URL (see `parseRedisUrl`), or a cluster as URLs separated by commas
 * (`redis://10.0.0.5:7000,redis://10.0.0.6:7000`), each checked the same way. A cluster has only
 * database 0, and its nodes must share one scheme and one set of credentials (the client uses one for
 * all): anything else is bad input (exit 2), named.
 *
 * @example
 * parseRedisTarget('redis://127.0.0.1:6379').kind; // 'single'
 * parseRedisTarget('redis://a:7000,redis://b:7000/1'); // throws: ... Redis Cluster has only database 0 ...
 */
export function parseRedisTarget(value: string): RedisTarget {
  const parts = value.split(',').map((part) => part.trim());
  if (parts.length === 1) return { kind: 'single', url: parseRedisUrl(value) };
  if (parts.some((part) => part === ''))
    throw new InvalidInputError(
      `--redis: "${maskCredentials(value, { value: true })}" has an empty entry; list cluster nodes as redis://host:port,redis://host:port`,
    );
  // An entry that is no URL is most likely the rest of a password cut at an unencoded comma.
  if (parts.some((part) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(part)))
    throw new InvalidInputError(
      `--redis: "${maskCredentials(value, { value: true })}" has an entry that is not a redis:// URL; list cluster nodes as redis://host:port,redis://host:port (a comma in a password is %2C)`,
    );
  const urls = parts.map((part) => ({ checked: parseRedisUrl(part), parsed: new URL(part) }));
  const shown = urls.map(({ checked }) => checked.shown).join(',');
  const bad = (problem: string) => new InvalidInputError(`--redis: "${shown}" ${problem}`);
  const [first] = urls;
  for (const { checked, parsed } of urls) {
    if (checked.database !== 0)
      throw bad(`names database ${checked.database}; Redis Cluster has only database 0, so drop the path`);
    if (parsed.protocol !== first?.parsed.protocol)
      throw bad('mixes redis:// and rediss://; a cluster takes one scheme for every node');
    if (parsed.username !== first.parsed.username || parsed.password !== first.parsed.password)
      throw bad(
        'gives its nodes different credentials; a cluster takes one user and password for every node',
      );
  }
  return {
    kind: 'cluster',
    ...clusterSeedOf(
      urls.map(({ parsed }) => parsed),
      shown,
    ),
  };
}
