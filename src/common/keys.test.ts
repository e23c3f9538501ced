import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeKeyPart,
  dependencyOfKey,
  dependencyTag,
  encodeKeyPart,
  globalKey,
  hashTagOf,
  idempotencyKeyOf,
  queueTag,
} from './keys.js';
import { assertDependencyName, assertPrefix, dependencyNameProblem, prefixProblem } from './names.js';

// Components built from the characters that could make two keys collide if they were not encoded: the
// separator, braces, the escape character itself, text that looks like an escape, whitespace, control
// characters, lone surrogates, the tag letters, and ordinary and astral characters.
const tricky = fc.string({
  unit: fc.constantFrom(
    ':',
    ':d:',
    ':q:',
    ':g}:',
    ':idempotency:',
    '{',
    '}',
    '%',
    '%3A',
    '%u',
    ' ',
    '\n',
    '\t',
    '\u0000',
    '\u00A0',
    '\uFEFF',
    '\uD800',
    '\uDFFF',
    '😀',
    'd',
    'q',
    'g',
    'a',
    'é',
    '*',
  ),
  minLength: 1,
  maxLength: 12,
});
const anyText = fc.oneof(tricky, fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }));
const pair = fc.tuple(anyText, anyText);

describe('encodeKeyPart', () => {
  it('keeps ordinary names readable and encodes the separator, braces, % and whitespace', () => {
    expect(encodeKeyPart('search-v2.eu_1')).toBe('search-v2.eu_1');
    expect(encodeKeyPart('eu:search {v2} 100%')).toBe('eu%3Asearch%20%7Bv2%7D%20100%25');
    expect(encodeKeyPart('a\nb\u0000\u00A0')).toBe('a%0Ab%00%C2%A0');
    expect(encodeKeyPart('\uFEFF')).toBe('%EF%BB%BF');
    expect(encodeKeyPart('x\uD800')).toBe('x%uD800');
    expect(encodeKeyPart('😀*')).toBe('😀*');
  });

  it('property: decodes back to the original, and the encoding holds no separator or brace', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const encoded = encodeKeyPart(text);
        expect(encoded).not.toMatch(/[:{}\s\p{Cc}]|\p{Cs}/u);
        expect(decodeKeyPart(encoded)).toBe(text);
      }),
      { numRuns: 2_000 },
    );
  });

  it.each(['a:b', 'a%3a', 'a%', 'a%ZZ', '%C3', '%41', '%u0041', '%uD83D%uDE00', 'a b', '%EF%BB'])(
    'refuses to decode %j, which it cannot have written',
    (text) => {
      expect(() => decodeKeyPart(text)).toThrow(TypeError);
    },
  );
});

describe('key construction', () => {
  it('separates the prefix from the name: shop + eu:search never meets shop:eu + search', () => {
    expect(dependencyTag('shop', 'eu:search')).toBe('{shop:d:eu%3Asearch}');
    expect(dependencyTag('shop:eu', 'search')).toBe('{shop%3Aeu:d:search}');
    expect(queueTag('stormguard', 'mail')).toBe('{stormguard:q:mail}');
    expect(globalKey('stormguard', 'queues')).toBe('{stormguard:g}:queues');
    expect(idempotencyKeyOf('stormguard', 'order-17')).toBe('stormguard:idempotency:order-17');
    // The key is the last component: only % and lone surrogates are encoded, so version-1 names stay.
    expect(idempotencyKeyOf('stormguard', 'charge:42 {eu}')).toBe('stormguard:idempotency:charge:42 {eu}');
    expect(idempotencyKeyOf('shop:eu', '100%\uD800')).toBe('shop%3Aeu:idempotency:100%25%uD800');
  });

  it('property: no two (prefix, name) pairs map to one key, in any kind of key', () => {
    const kinds = [dependencyTag, queueTag, globalKey, idempotencyKeyOf];
    fc.assert(
      fc.property(pair, pair, ([p1, n1], [p2, n2]) => {
        fc.pre(p1 !== p2 || n1 !== n2);
        const first = kinds.map((kind) => kind(p1, n1));
        const second = kinds.map((kind) => kind(p2, n2));
        // Neither within one kind nor across kinds.
        for (const a of first) for (const b of second) expect(a).not.toBe(b);
        expect(new Set(first).size).toBe(kinds.length);
      }),
      { numRuns: 3_000 },
    );
  });

  it('property: moving text between the prefix and the name always changes the key', () => {
    // The collisions worth hunting: (x, y + z) against (x + y, z), e.g. ('shop', 'eu:search') and ('shop:eu', 'search').
    const kinds = [dependencyTag, queueTag, globalKey, idempotencyKeyOf];
    fc.assert(
      fc.property(anyText, anyText, anyText, (x, y, z) => {
        for (const kind of kinds) expect(kind(x, y + z)).not.toBe(kind(x + y, z));
      }),
      { numRuns: 3_000 },
    );
  });

  it('property: the Redis hash tag of a dependency key is the whole encoded (prefix, dependency)', () => {
    fc.assert(
      fc.property(pair, ([prefix, dependency]) => {
        for (const suffix of [':budget', ':breaker']) {
          const key = `${dependencyTag(prefix, dependency)}${suffix}`;
          expect(hashTagOf(key)).toBe(`${encodeKeyPart(prefix)}:d:${encodeKeyPart(dependency)}`);
          expect(dependencyOfKey(prefix, suffix, key)).toBe(dependency);
        }
        expect(hashTagOf(`${queueTag(prefix, dependency)}:dlq`)).toBe(
          `${encodeKeyPart(prefix)}:q:${encodeKeyPart(dependency)}`,
        );
      }),
      { numRuns: 2_000 },
    );
  });

  it('reads no dependency out of a key of another prefix, suffix or encoding', () => {
    const key = `${dependencyTag('shop', 'search')}:budget`;
    expect(dependencyOfKey('shop', ':budget', key)).toBe('search');
    expect(dependencyOfKey('shop:eu', ':budget', key)).toBeUndefined();
    expect(dependencyOfKey('shop', ':breaker', key)).toBeUndefined();
    expect(dependencyOfKey('shop', ':budget', '{shop:d:a:b}:budget')).toBeUndefined();
    expect(dependencyOfKey('shop', ':budget', '{shop:d:}:budget')).toBeUndefined();
  });
});

describe('the name rule', () => {
  it('accepts any non-empty name up to the bound, braces, spaces and newlines included', () => {
    for (const name of ['search', 'send email', 'a{b}', 'line\nbreak', 'x'.repeat(200)])
      expect(dependencyNameProblem(name)).toBeUndefined();
    expect(dependencyNameProblem('')).toBe('must not be empty');
    expect(dependencyNameProblem('x'.repeat(201))).toBe('must be at most 200 characters, got 201');
    expect(dependencyNameProblem(7)).toBe('must be a string, got number');
    expect(() => assertDependencyName('')).toThrow(/dependency "": must not be empty; name the downstream/);
  });

  it('accepts any non-empty prefix up to 64 characters', () => {
    expect(prefixProblem('shop:eu')).toBeUndefined();
    expect(prefixProblem('a{b} c')).toBeUndefined();
    expect(prefixProblem('x'.repeat(65))).toBe('must be at most 64 characters, got 65');
    expect(() => assertPrefix('')).toThrow(/prefix "": must not be empty; name the application/);
  });
});
