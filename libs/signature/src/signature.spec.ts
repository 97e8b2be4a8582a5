import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { canonicalString, compareBytes, sameText, sign, signText, verify, verifyText } from '@app/signature';

interface VectorCase {
  name: string;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
  canonical: string;
  signature: string;
}
interface Vectors {
  api_secret: string;
  cases: VectorCase[];
}

// The shared known answers, read as they are: the test does not carry its own copy.
const vectors = JSON.parse(readFileSync(join(__dirname, '../../../../shared/vectors/signature.json'), 'utf8')) as Vectors;

describe('signature vectors', () => {
  it('has cases to run', () => {
    expect(vectors.cases.length).toBeGreaterThan(0);
  });

  it.each(vectors.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const params = { ...c.query, ...c.body };
    expect(canonicalString(params)).toBe(c.canonical);
    expect(sign(params, vectors.api_secret)).toBe(c.signature);
    expect(verify(params, c.signature, vectors.api_secret)).toBe(true);
    expect(verify(params, c.signature.toUpperCase(), vectors.api_secret)).toBe(true);
    expect(verify(params, c.signature, `${vectors.api_secret}x`)).toBe(false);
  });
});

describe('canonicalString', () => {
  it('leaves out signature, null, undefined and empty strings but keeps 0 and false', () => {
    expect(canonicalString({ b: 0, a: false, c: '', d: null, e: undefined, signature: 'x' })).toBe('a=false&b=0');
  });

  it('sorts keys by UTF-8 bytes, not UTF-16 code units', () => {
    // U+FF5E (3 bytes, EF BD 9E) sorts before U+1F600 (4 bytes, F0 ...) in bytes, after it in UTF-16.
    expect(canonicalString({ '\u{1F600}': 1, '\uFF5E': 2 })).toBe('\uFF5E=2&\u{1F600}=1');
  });

  it('writes numbers as JavaScript does and nested values as sorted JSON', () => {
    expect(canonicalString({ amount: 100.5, n: 1e21, meta: { z: [{ b: 1, a: 2 }], a: null } })).toBe(
      'amount=100.5&meta={"a":null,"z":[{"a":2,"b":1}]}&n=1e+21',
    );
  });

  it('does not URL-encode', () => {
    expect(canonicalString({ url: 'https://x.test/a?b=c&d=e f' })).toBe('url=https://x.test/a?b=c&d=e f');
  });
});

describe('compareBytes', () => {
  // Any UTF-16 units, lone surrogates included, drawn from a small set so prefixes and near-equal strings are common.
  const unit = fc.constantFrom(0x41, 0x61, 0x7a, 0xe9, 0x4e2d, 0xd7ff, 0xd800, 0xd83d, 0xdbff, 0xdc00, 0xde00, 0xdfff, 0xe000, 0xff5e, 0xfffd, 0xffff);
  const text = fc.array(unit, { maxLength: 6 }).map((units) => String.fromCharCode(...units));
  const byBuffers = (a: string, b: string): number => Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));

  it('orders every pair of strings as their UTF-8 bytes do', () => {
    fc.assert(
      fc.property(text, text, (a, b) => Math.sign(compareBytes(a, b)) === byBuffers(a, b)),
      { numRuns: 20_000 },
    );
    fc.assert(
      fc.property(text, text, text, (prefix, a, b) => Math.sign(compareBytes(prefix + a, prefix + b)) === byBuffers(prefix + a, prefix + b)),
      { numRuns: 20_000 },
    );
  });
});

describe('verify', () => {
  const params = { api_key: 'mk_x', nonce: 'abcdefgh', timestamp: 1 };
  const good = sign(params, 'secret');

  it('refuses malformed signatures without throwing', () => {
    for (const bad of ['', 'zz', good.slice(2), `${good}00`, 'g'.repeat(64)]) {
      expect(verify(params, bad, 'secret')).toBe(false);
    }
  });

  it('refuses a changed parameter', () => {
    expect(verify({ ...params, nonce: 'abcdefgi' }, good, 'secret')).toBe(false);
  });
});

describe('signText and verifyText', () => {
  it('is the HMAC-SHA256 hex that sign() puts over the canonical string', () => {
    const params = { b: 2, a: 'x' };
    expect(signText(canonicalString(params), 'secret')).toBe(sign(params, 'secret'));
    // Known answer: HMAC-SHA256(key "key", "The quick brown fox jumps over the lazy dog").
    expect(signText('The quick brown fox jumps over the lazy dog', 'key')).toBe('f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8');
  });
  it('verifies in any case and refuses another message, another secret or a malformed signature', () => {
    const good = signText('checkout:1', 's');
    expect(verifyText('checkout:1', good, 's')).toBe(true);
    expect(verifyText('checkout:1', good.toUpperCase(), 's')).toBe(true);
    expect(verifyText('checkout:2', good, 's')).toBe(false);
    expect(verifyText('checkout:1', good, 't')).toBe(false);
    for (const bad of ['', good.slice(1), `${good}0`, ` ${good.slice(1)}`]) expect(verifyText('checkout:1', bad, 's')).toBe(false);
  });
});

describe('sameText', () => {
  it('is true for equal texts only, whatever their lengths', () => {
    expect(sameText('admin:pw', 'admin:pw')).toBe(true);
    expect(sameText('', '')).toBe(true);
    expect(sameText('\u{1F600}é', '\u{1F600}é')).toBe(true);
    for (const [a, b] of [
      ['admin:pw', 'admin:pX'],
      ['admin:pw', 'Admin:pw'],
      ['admin:pw', 'admin:pw '],
      ['admin:pw', ''],
      ['abc', 'abcd'],
    ]) {
      expect([a, b, sameText(a, b)]).toEqual([a, b, false]);
      expect([b, a, sameText(b, a)]).toEqual([b, a, false]);
    }
  });
});
