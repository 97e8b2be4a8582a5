import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MerchantClient, canonicalString, signParams } from './merchant-client';

interface Vectors {
  api_secret: string;
  cases: { name: string; query: Record<string, unknown>; body: Record<string, unknown>; canonical: string; signature: string }[];
}
const vectors = JSON.parse(readFileSync(join(__dirname, '../../shared/vectors/signature.json'), 'utf8')) as Vectors;

function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const o = value as Record<string, unknown>;
  return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
}

describe('examples/merchant-client.ts against the shared vectors', () => {
  it.each(vectors.cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const params = { ...c.query, ...c.body };
    expect(canonicalString(params)).toBe(c.canonical);
    expect(signParams(params, vectors.api_secret)).toBe(c.signature);
  });

  it('verifies a callback body and its Standard Webhooks headers, and refuses a changed one', () => {
    const cb = vectors.cases.find((c) => c.body.event)!;
    const client = new MerchantClient('http://unused', String(cb.body.api_key), vectors.api_secret);
    const body = { ...cb.body, signature: cb.signature };
    expect(client.verifyCallbackBody(body)).toBe(true);
    expect(client.verifyCallbackBody({ ...body, merchant_actual_amount: 999999 })).toBe(false);

    const raw = JSON.stringify(body);
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = createHmac('sha256', vectors.api_secret).update(`${cb.body.event_id}.${ts}.${raw}`).digest('base64');
    const headers = { 'webhook-id': String(cb.body.event_id), 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` };
    expect(client.verifyCallbackHeaders(headers, raw)).toBe(true);
    expect(client.verifyCallbackHeaders(headers, `${raw} `)).toBe(false);
    expect(client.verifyCallbackHeaders({ ...headers, 'webhook-timestamp': String(Number(ts) - 3600) }, raw)).toBe(false);
  });
});

describe('examples/sign.sh against the shared vectors', () => {
  it.each(vectors.cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const pairs = Object.entries({ ...c.query, ...c.body })
      .filter(([, v]) => v !== null)
      .map(([k, v]) => `${k}=${typeof v === 'object' ? canonicalJson(v) : String(v)}`);
    const out = execFileSync('bash', [join(__dirname, 'sign.sh'), vectors.api_secret, ...pairs], { encoding: 'utf8' });
    expect(out.trim()).toBe(c.signature);
  });
});
