import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { verify } from '@app/signature';
import { buildSignedCallback, newCallbackNonce, webhookSignature } from './callback-payload';

const vectors = JSON.parse(readFileSync(join(__dirname, '../../../../shared/vectors/signature.json'), 'utf8')) as {
  api_secret: string;
  cases: { name: string; body: Record<string, unknown>; signature: string }[];
};
const callbackCase = vectors.cases.find((c) => c.name.startsWith('callback payload'))!;

describe('callback payload', () => {
  const { api_key, timestamp, nonce, ...facts } = callbackCase.body as Record<string, unknown> & { api_key: string; timestamp: number; nonce: string };
  const event = { id: facts.event_id as string, type: facts.event as string, payload: facts };
  const merchant = { apiKey: api_key, apiSecret: vectors.api_secret };

  it('signs the body exactly like requests (the vector)', () => {
    const { body } = buildSignedCallback(event, merchant, 1, nonce, timestamp * 1000);
    const sent = JSON.parse(body) as Record<string, unknown>;
    expect([sent.timestamp, sent.nonce]).toEqual([timestamp, nonce]);
    const { signature, ...rest } = sent;
    expect(signature).toBe(callbackCase.signature);
    expect(verify(rest, signature as string, vectors.api_secret)).toBe(true);
    expect(Object.keys(sent).slice(0, 3)).toEqual(['event_id', 'event', 'order_no']);
  });

  it('makes nonces a request would accept, a new one each time', () => {
    const nonces = new Set(Array.from({ length: 100 }, newCallbackNonce));
    expect(nonces.size).toBe(100);
    for (const n of nonces) expect(n).toMatch(/^[A-Za-z0-9_-]{8,64}$/);
  });

  it('carries Standard Webhooks headers that the standardwebhooks package verifies', () => {
    const now = Date.now();
    const { body, headers } = buildSignedCallback(event, merchant, 3, newCallbackNonce(), now);
    expect(headers['webhook-id']).toBe(event.id);
    expect(headers['x-event-id']).toBe(event.id);
    expect(headers['x-event-type']).toBe('order.paid');
    expect(headers['x-delivery-attempt']).toBe('3');
    const wh = new Webhook(`whsec_${Buffer.from(vectors.api_secret, 'utf8').toString('base64')}`);
    expect(wh.verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => wh.verify(body.replace('100.00', '100.01'), headers)).toThrow();
    expect(webhookSignature(vectors.api_secret, event.id, Math.floor(now / 1000), body)).toBe(headers['webhook-signature']);
  });

  it('during a rotation grace: body signed with the previous secret, both v1 entries in webhook-signature (new first)', () => {
    const previous = 'sk_the_previous_secret_of_this_merchant_0123456789';
    const now = Date.now();
    const { body, headers } = buildSignedCallback(event, { ...merchant, previousApiSecret: previous }, 1, newCallbackNonce(), now);
    const ts = Math.floor(now / 1000);
    expect(headers['webhook-signature']).toBe(`${webhookSignature(vectors.api_secret, event.id, ts, body)} ${webhookSignature(previous, event.id, ts, body)}`);
    // SPEC 3: a receiver still holding only the previous secret verifies the body as well as the header.
    const { signature, ...rest } = JSON.parse(body) as Record<string, unknown>;
    expect(verify(rest, signature as string, previous)).toBe(true);
    expect(verify(rest, signature as string, vectors.api_secret)).toBe(false);
    for (const secret of [vectors.api_secret, previous]) {
      const wh = new Webhook(`whsec_${Buffer.from(secret, 'utf8').toString('base64')}`);
      expect(wh.verify(body, headers)).toEqual(JSON.parse(body));
    }
    const stranger = new Webhook(`whsec_${Buffer.from('sk_someone_else', 'utf8').toString('base64')}`);
    expect(() => stranger.verify(body, headers)).toThrow();
  });

  it('without a previous secret (no grace, a grace of 0, or once it ended): the body and the header with the current secret only', () => {
    const now = Date.now();
    for (const previousApiSecret of [undefined, null, '']) {
      const { body, headers } = buildSignedCallback(event, { ...merchant, previousApiSecret }, 1, newCallbackNonce(), now);
      const { signature, ...rest } = JSON.parse(body) as Record<string, unknown>;
      expect(verify(rest, signature as string, vectors.api_secret)).toBe(true);
      expect(headers['webhook-signature']).toBe(webhookSignature(vectors.api_secret, event.id, Math.floor(now / 1000), body));
    }
  });
});
