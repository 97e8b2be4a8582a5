import type { INestApplicationContext } from '@nestjs/common';
import { Webhook } from 'standardwebhooks';
import { CallbackJobs } from '@app/callbacks';
import type { Credentials } from '@app/operator';
import { verify } from '@app/signature';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { CallbackFixtures, CallbackReceiver, type ReceivedCallback, HEARD_WITHIN_MS, waitFor } from './helpers/callbacks';

const TUNING = { callbackTimeoutMs: 1000, sweepIntervalMs: 300, sweepGraceMs: 2000 };

/** The Standard Webhooks library, given the secret as a merchant would configure it. */
function verifiesWith(callback: ReceivedCallback, secret: string): boolean {
  try {
    new Webhook(`whsec_${Buffer.from(secret, 'utf8').toString('base64')}`).verify(callback.raw, callback.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

function bodyVerifiesWith(callback: ReceivedCallback, secret: string): boolean {
  const { signature, ...rest } = callback.body;
  return verify(rest, signature as string, secret);
}

describe('secret rotation with a grace period (SPEC 3)', () => {
  let api: TestApi;
  let worker: INestApplicationContext;
  let receiver: CallbackReceiver;
  let db: CallbackFixtures;
  let merchant: Credentials;
  let channelId: number;

  beforeAll(async () => {
    receiver = await CallbackReceiver.start();
    api = await startTestApi({ CALLBACK_RETRY_SCHEDULE: '200ms', CALLBACK_ALLOW_PRIVATE: 'true' });
    worker = await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING });
    db = await CallbackFixtures.connect(api.databaseUrl);
    ({
      merchant,
      channels: { remotepay: channelId },
    } = await merchantWithChannels(api.operator, { notifyUrl: receiver.url }));
  });

  afterAll(async () => {
    await worker?.close();
    await db?.close();
    await api?.close();
    await receiver?.close();
  });

  /** A real delivery by the worker of a new event, as the receiver got it. */
  async function deliveredCallback(): Promise<ReceivedCallback> {
    const order = await db.insertOrder(merchant.id, channelId);
    const { eventId, deliveryId } = await db.insertEvent(order.orderId);
    await api.app.get(CallbackJobs).deliver(deliveryId);
    return waitFor(() => receiver.forEvent(eventId)[0], 10_000, 'the callback arrived');
  }

  it('during the grace: both secrets verify requests; order.paid keeps its body signed with the old secret and verifies with either; after it only the new one', async () => {
    const before = await deliveredCallback();
    expect(String(before.headers['webhook-signature']).split(' ')).toHaveLength(1);

    const rotated = await api.operator.merchants.rotateSecret(merchant.id);
    const old = merchant.api_secret;
    const fresh = rotated.api_secret;

    // Requests: the new secret works once the rotation is heard (NOTIFY), the old one still works during the grace.
    await waitFor(
      async () => (await post(api.app, '/api/merchant/getPayChannels', signed(rotated))).body.code === 1,
      HEARD_WITHIN_MS,
      'the new secret accepted',
    );
    expect((await post(api.app, '/api/merchant/getPayChannels', signed(merchant))).body.code).toBe(1);

    const during = await deliveredCallback();
    expect(during.body.event).toBe('order.paid');
    const entries = String(during.headers['webhook-signature']).split(' ');
    expect(entries).toHaveLength(2);
    expect(entries.every((e) => e.startsWith('v1,'))).toBe(true);
    expect(verifiesWith(during, fresh)).toBe(true);
    expect(verifiesWith(during, old)).toBe(true);
    expect(verifiesWith(during, 'sk_not_this_merchants_secret')).toBe(false);
    // The new signature comes first; the body is signed with the previous secret until the grace ends (issue 38):
    // a receiver not yet given the new secret passes both checks.
    expect(verifiesWith({ ...during, headers: { ...during.headers, 'webhook-signature': entries[0] } }, fresh)).toBe(true);
    expect(bodyVerifiesWith(during, old)).toBe(true);
    expect(bodyVerifiesWith(during, fresh)).toBe(false);

    // callbackTest, sent by the API, carries both too.
    const tested = receiver.received.length;
    const testAnswer = await post<{ signed_with: unknown }>(api.app, '/api/merchant/callbackTest', signed(rotated));
    expect(testAnswer.body.code).toBe(1);
    // The answer says which secret signed what, and it is so.
    expect(testAnswer.body.data.signed_with).toEqual({ body: 'previous', webhook_signature: ['current', 'previous'] });
    const test = receiver.received[tested];
    expect(String(test.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifiesWith(test, old) && verifiesWith(test, fresh)).toBe(true);
    expect([bodyVerifiesWith(test, old), bodyVerifiesWith(test, fresh)]).toEqual([true, false]);

    // The grace ends (as if 24 h passed).
    await db.db.query(`UPDATE merchants SET api_secret_previous_until = now() WHERE id = $1`, [merchant.id]);
    await waitFor(
      async () => (await post(api.app, '/api/merchant/getPayChannels', signed(merchant))).body.code === 40102,
      HEARD_WITHIN_MS,
      'the old secret refused',
    );
    expect((await post(api.app, '/api/merchant/getPayChannels', signed(rotated))).body.code).toBe(1);
    const after = await deliveredCallback();
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifiesWith(after, fresh)).toBe(true);
    expect(verifiesWith(after, old)).toBe(false);
    expect([bodyVerifiesWith(after, old), bodyVerifiesWith(after, fresh)]).toEqual([false, true]);
    merchant = { ...merchant, api_secret: fresh };
  });

  it('--grace 0 revokes the previous secret at once: requests 40102, callbacks (header and body) verify with the new secret only', async () => {
    const rotated = await api.operator.merchants.rotateSecret(merchant.id, '0');
    await waitFor(
      async () => (await post(api.app, '/api/merchant/getPayChannels', signed(merchant))).body.code === 40102,
      HEARD_WITHIN_MS,
      'the old secret refused',
    );
    expect((await post(api.app, '/api/merchant/getPayChannels', signed(rotated))).body.code).toBe(1);
    const callback = await deliveredCallback();
    expect(String(callback.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifiesWith(callback, rotated.api_secret)).toBe(true);
    expect(verifiesWith(callback, merchant.api_secret)).toBe(false);
    expect([bodyVerifiesWith(callback, merchant.api_secret), bodyVerifiesWith(callback, rotated.api_secret)]).toEqual([false, true]);
    const testAnswer = await post<{ signed_with: unknown }>(api.app, '/api/merchant/callbackTest', signed(rotated));
    expect(testAnswer.body.data.signed_with).toEqual({ body: 'current', webhook_signature: ['current'] });
  });
});
