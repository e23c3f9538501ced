/**
 * Key construction for every store (Redis, PostgreSQL, memory): one scheme, injective by construction.
 *
 * Each component (a prefix, a dependency, a queue, an idempotency key) is encoded with
 * {@link encodeKeyPart}: `%`, `:`, `{`, `}`, whitespace and control characters become `%XX` (the UTF-8
 * bytes, upper-case hex), and a lone surrogate becomes `%uXXXX`. An encoded component therefore never holds
 * `:` or a brace, so `:` separates components unambiguously and braces only ever delimit a Redis Cluster
 * hash tag: no two (prefix, name) pairs map to one key, and `shop` + `eu:search` (`{shop:d:eu%3Asearch}`)
 * never meets `shop:eu` + `search` (`{shop%3Aeu:d:search}`).
 *
 * Layout (version {@link KEY_SCHEMA_VERSION}), `P` the encoded prefix:
 * - `{P:d:<dependency>}`   a dependency's tag: its budget (`…:budget`) and breaker (`…:breaker`) share one slot
 * - `{P:q:<queue>}`        a queue's tag: all of a queue's stormguard keys share one slot
 * - `{P:g}:<name>`         fleet-wide registries, all in one slot
 * - `P:idempotency:<key>`  an idempotency key: the last component, so only `%` and lone surrogates are
 *                          encoded in it (a key such as `charge:42` keeps the name it had in version 1, so
 *                          outcomes stored before an upgrade are still found after it)
 *
 * @example
 * dependencyTag('stormguard', 'search'); // '{stormguard:d:search}'
 * dependencyTag('shop', 'eu:search'); // '{shop:d:eu%3Asearch}'
 */

/**
 * The default key prefix of every stormguard store.
 *
 * @example
 * dependencyTag(DEFAULT_PREFIX, 'search'); // '{stormguard:d:search}'
 */
export const DEFAULT_PREFIX = 'stormguard';

/**
 * Version of the key layout above. Version 1 was `{<prefix>:<dependency>}:budget` and
 * `{<prefix>:breaker:<dependency>}:state`, with names unencoded (and so not injective).
 *
 * @example
 * KEY_SCHEMA_VERSION; // 2
 */
export const KEY_SCHEMA_VERSION = 2;

// What must not appear raw in a component: the separator, the hash-tag braces, the escape character, and
// what garbles logs and tables (whitespace, control characters). A lone surrogate has no UTF-8 form: left
// raw, two different names would reach the server as the same bytes (both become U+FFFD).
const ENCODED = /[%:{}\s\p{Cc}]|\p{Cs}/gu;
// The last component of a key only needs to be injective, not delimited.
const TAIL_ENCODED = /%|\p{Cs}/gu;
const ESCAPE = /%u([0-9A-F]{4})|((?:%[0-9A-F]{2})+)/g;
const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * One key component with `%`, `:`, `{`, `}`, whitespace and control characters percent-encoded (UTF-8,
 * upper-case hex; a lone surrogate as `%uXXXX`). Everything else is kept, so ordinary names stay readable.
 *
 * @example
 * encodeKeyPart('search'); // 'search'
 * encodeKeyPart('eu:search {v2}'); // 'eu%3Asearch%20%7Bv2%7D'
 */
export function encodeKeyPart(part: string): string {
  return part.replace(ENCODED, encodeOne);
}

function encodeOne(ch: string): string {
  if (ch.length === 1 && ch >= '\uD800' && ch <= '\uDFFF')
    return `%u${ch.charCodeAt(0).toString(16).toUpperCase()}`;
  let out = '';
  for (const byte of utf8.encode(ch)) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

/**
 * The component {@link encodeKeyPart} encoded as `encoded`. Throws a `TypeError` for text it cannot have
 * produced (a raw `:`, a malformed escape, lower-case hex…): each component has exactly one encoding.
 *
 * @example
 * decodeKeyPart('eu%3Asearch'); // 'eu:search'
 * decodeKeyPart('a:b'); // throws TypeError
 */
export function decodeKeyPart(encoded: string): string {
  const decoded = encoded.replace(ESCAPE, (_, unit: string | undefined, bytes: string | undefined) => {
    if (unit !== undefined) return String.fromCharCode(Number.parseInt(unit, 16));
    const hex = (bytes ?? '').replaceAll('%', '');
    const raw = new Uint8Array(hex.length / 2);
    for (let i = 0; i < raw.length; i++) raw[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
    try {
      return strictUtf8.decode(raw);
    } catch {
      throw new TypeError(`key part ${JSON.stringify(encoded)}: ${bytes} is not UTF-8`);
    }
  });
  if (encodeKeyPart(decoded) !== encoded)
    throw new TypeError(`key part ${JSON.stringify(encoded)} is not in the encoding stormguard writes`);
  return decoded;
}

/**
 * The Redis Cluster hash tag of one dependency under `prefix`: `{<prefix>:d:<dependency>}`, both encoded.
 * Every key of the dependency's state starts with it, so its budget and breaker live in one slot.
 *
 * @example
 * `${dependencyTag('stormguard', 'search')}:budget`; // '{stormguard:d:search}:budget'
 */
export function dependencyTag(prefix: string, dependency: string): string {
  return `{${encodeKeyPart(prefix)}:d:${encodeKeyPart(dependency)}}`;
}

/**
 * The Redis Cluster hash tag of one queue under `prefix`: `{<prefix>:q:<queue>}`, both encoded. All of a
 * queue's stormguard keys (dead letters, their indexes, meta) start with it.
 *
 * @example
 * `${queueTag('stormguard', 'mail')}:dlq`; // '{stormguard:q:mail}:dlq'
 */
export function queueTag(prefix: string, queue: string): string {
  return `{${encodeKeyPart(prefix)}:q:${encodeKeyPart(queue)}}`;
}

/**
 * A fleet-wide key under `prefix` (a registry such as the list of queues): `{<prefix>:g}:<name>`. All of a
 * prefix's global keys share one slot, so one script may touch several.
 *
 * @example
 * globalKey('stormguard', 'queues'); // '{stormguard:g}:queues'
 */
export function globalKey(prefix: string, name: string): string {
  return `{${encodeKeyPart(prefix)}:g}:${encodeKeyPart(name)}`;
}

/**
 * The key holding an idempotency key's state: `<prefix>:idempotency:<key>`, the prefix encoded. The key is
 * the last component (the prefix holds no `:`, so the first `:` ends it), so only `%` and lone surrogates
 * are encoded in it: keys such as `charge:42` keep their version-1 names, and outcomes stored before an
 * upgrade are found after it. One Redis key per operation, so a brace in it never splits anything.
 *
 * @example
 * idempotencyKeyOf('stormguard', 'charge:42'); // 'stormguard:idempotency:charge:42'
 * idempotencyKeyOf('shop:eu', '100%'); // 'shop%3Aeu:idempotency:100%25'
 */
export function idempotencyKeyOf(prefix: string, key: string): string {
  return `${encodeKeyPart(prefix)}:idempotency:${key.replace(TAIL_ENCODED, encodeOne)}`;
}

/**
 * The dependency a key of the form `{<prefix>:d:<dependency>}<suffix>` belongs to, or `undefined` for any
 * other key (another prefix, another suffix, a name stormguard could not have encoded).
 *
 * @example
 * dependencyOfKey('stormguard', ':budget', '{stormguard:d:eu%3Asearch}:budget'); // 'eu:search'
 */
export function dependencyOfKey(prefix: string, suffix: string, key: string): string | undefined {
  const head = `{${encodeKeyPart(prefix)}:d:`;
  const tail = `}${suffix}`;
  if (!key.startsWith(head) || !key.endsWith(tail) || key.length <= head.length + tail.length)
    return undefined;
  try {
    return decodeKeyPart(key.slice(head.length, key.length - tail.length));
  } catch {
    return undefined;
  }
}

/**
 * The Redis Cluster hash tag of `key` as Redis computes it: the text between the first `{` and the first
 * `}` after it, when that is not empty; otherwise the whole key.
 *
 * @example
 * hashTagOf('{stormguard:d:search}:budget'); // 'stormguard:d:search'
 */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}
