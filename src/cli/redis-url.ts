import { InvalidInputError } from '../errors/invalid-input-error.js';
import { credentialsProblem, maskCredentials } from './mask-credentials.js';

/**
 * A `--redis` URL checked for everything that ioredis would otherwise guess or ignore.
 *
 * @example
 * parseRedisUrl('redis://10.0.0.5:6379/2'); // { url: 'redis://10.0.0.5:6379/2', database: 2, shown: 'redis://10.0.0.5:6379/2' }
 */
export interface RedisUrl {
  /** The URL as given, for ioredis. */
  url: string;
  /** The database index from the path; 0 when the path is empty. */
  database: number;
  /** The URL with any password masked, for messages. */
  shown: string;
}

/** Query parameters ioredis reads from a URL that are safe to pass on (the rest would override options silently). */
const QUERY_PARAMETERS = new Set(['family']);

/**
 * Checks a `--redis` URL and refuses the ambiguous ones as bad input (exit 2), naming the flag: not a
 * URL, a scheme other than redis:// or rediss://, no host (`redis://` would silently mean
 * 127.0.0.1:6379), a path that is not a database number (`/abc`, `/1/2`, `/01`), or a query parameter
 * ioredis would apply behind the user's back (`?db=3` next to a path). Whether the database exists on the
 * server is checked once connected (see `connectRedis`). Passwords never appear in messages.
 *
 * @example
 * parseRedisUrl('redis://:secret@cache:6380/3').database; // 3
 * parseRedisUrl('redis://'); // throws: --redis: "redis://" names no host; write it like redis://127.0.0.1:6379
 */
export function parseRedisUrl(url: string): RedisUrl {
  // Masked from the text itself: a password with an unencoded `#`, `?` or `/` is no password to `new URL`.
  const shown = maskCredentials(url, { value: true });
  const misread = credentialsProblem('--redis', url);
  if (misread) throw new InvalidInputError(misread);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError(`--redis: "${shown}" is not a URL; write it like redis://127.0.0.1:6379`);
  }
  const bad = (problem: string) => new InvalidInputError(`--redis: "${shown}" ${problem}`);
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')
    throw bad('must start with redis:// or rediss://');
  if (parsed.hostname === '') throw bad('names no host; write it like redis://127.0.0.1:6379');
  if (parsed.port === '0') throw bad('has port 0; use the port Redis listens on, e.g. 6379');
  const path = parsed.pathname;
  if (path !== '' && path !== '/' && !/^\/(0|[1-9]\d{0,8})$/.test(path))
    throw bad(
      `has the path "${decodeURIComponent(path)}", which is not a database number; write the database as a whole number, e.g. redis://127.0.0.1:6379/0`,
    );
  for (const key of parsed.searchParams.keys())
    if (!QUERY_PARAMETERS.has(key))
      throw bad(
        `has the query parameter "${key}", which is not supported${key === 'db' ? '; put the database in the path, e.g. redis://127.0.0.1:6379/2' : ''}`,
      );
  if (parsed.hash !== '') throw bad('has a #fragment; remove it');
  return { url, database: path.length > 1 ? Number(path.slice(1)) : 0, shown };
}
