import { InvalidInputError } from '../errors/invalid-input-error.js';
import { credentialsProblem, maskCredentials } from './mask-credentials.js';

/**
 * A `--postgres` URL checked before connecting.
 *
 * @example
 * parsePostgresUrl('postgres://app:secret@db:5432/shop').shown; // 'postgres://app:***@db:5432/shop'
 */
export interface PostgresUrl {
  /** The URL as given, for node-postgres. */
  url: string;
  /** The URL with any password masked, for messages. */
  shown: string;
}

/**
 * Checks a `--postgres` URL and refuses what node-postgres would misread as bad input (exit 2), naming
 * the flag: not a URL, a scheme other than postgres:// or postgresql://, or no host (node-postgres would
 * fall back to PGHOST or a local socket behind the user's back). Passwords never appear in messages.
 *
 * @example
 * parsePostgresUrl('postgresql://127.0.0.1:5432/app'); // ok
 * parsePostgresUrl('mysql://db/app'); // throws: --postgres: "mysql://db/app" must start with postgres:// or postgresql://
 */
export function parsePostgresUrl(url: string): PostgresUrl {
  // Masked from the text itself: a password with an unencoded `#`, `?` or `/` is no password to `new URL`.
  const shown = maskCredentials(url, { value: true });
  const misread = credentialsProblem('--postgres', url);
  if (misread) throw new InvalidInputError(misread);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError(
      `--postgres: "${shown}" is not a URL; write it like postgres://user@127.0.0.1:5432/database`,
    );
  }
  const bad = (problem: string) => new InvalidInputError(`--postgres: "${shown}" ${problem}`);
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')
    throw bad('must start with postgres:// or postgresql://');
  if (parsed.hostname === '' && !parsed.searchParams.has('host'))
    throw bad('names no host; write it like postgres://user@127.0.0.1:5432/database');
  return { url, shown };
}
