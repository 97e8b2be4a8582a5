import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalString, sign, verify } from '@app/signature';

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
