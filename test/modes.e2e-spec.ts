import { DataSource } from 'typeorm';
import { ChannelAdapters, sandboxCheckoutToken, signSandboxNotification } from '@app/channels';
import { ChannelRepository, dataSourceOptions, runMigrations } from '@app/db';
import type { Credentials } from '@app/operator';
import { MIGRATIONS } from '../migrations';
import { MerchantMode1764000100000 } from '../migrations/1764000100000-merchant-mode';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { CallbackFixtures } from './helpers/callbacks';
import { createEmptyTestDatabase } from './helpers/database';
import { createOrder, orderRow } from './helpers/orders';

const EPAY_CONFIG = JSON.stringify({ merchant_no: '1001', secret_key: 'epay-key', gateway_url: 'https://pay.example.test/' });

/** A link as rows made before modes existed may hold it: channel:link refuses it now. */
async function linkBehindTheRules(db: CallbackFixtures, merchantId: number, channelId: number): Promise<void> {
  await db.db.query(`INSERT INTO merchant_channels (merchant_id, channel_id) VALUES ($1, $2)`, [merchantId, channelId]);
}

async function listedChannels(api: TestApi, merchant: Credentials): Promise<number[]> {
  const res = await post<{ list: { id: number }[] }>(api.app, '/api/merchant/getPayChannels', signed(merchant));
  expect(res.body.code).toBe(1);
  return res.body.data.list.map((c) => c.id);
}

describe('live and test mode (SPEC 5): sandbox money never reaches a live balance', () => {
  let api: TestApi;
  let db: CallbackFixtures;
  let live: Credentials;
  let sandboxChannel: number;
  let epayChannel: number;

  beforeAll(async () => {
    api = await startTestApi();
    db = await CallbackFixtures.connect(api.databaseUrl);
    live = await api.operator.merchants.create({ name: 'live shop' });
    ({ id: sandboxChannel } = await api.operator.channels.create({ category: 'processor', name: 'sandbox', payMethod: 'alipay', adapter: 'sandbox' }));
    ({ id: epayChannel } = await api.operator.channels.create({
      category: 'processor',
      name: 'epay',
      payMethod: 'alipay',
      adapter: 'epay',
      config: EPAY_CONFIG,
    }));
    await api.operator.channels.link(live.id, epayChannel);
    await linkBehindTheRules(db, live.id, sandboxChannel);
  });
  afterAll(async () => {
    await db?.close();
    await api?.close();
  });

  it('a live merchant cannot create an order on a sandbox channel, even linked before the rule, nor see it', async () => {
    const res = await createOrder(api.app, live, { cny_amount: '1000000.00', paychannel_id: sandboxChannel });
    expect([res.status, res.body.code]).toEqual([403, 40301]);
    expect(await listedChannels(api, live)).toEqual([epayChannel]);
    const real = await createOrder(api.app, live, { cny_amount: '10.00', paychannel_id: epayChannel });
    expect(real.body.code).toBe(1);
    expect(await api.operator.ledger.balance(live.id)).toEqual({ available_fen: 0, deposit_fen: 0 });
  });

  it("a live merchant's sandbox order from before the rule cannot be paid on the checkout page", async () => {
    const { orderNo } = await db.insertOrder(live.id, sandboxChannel, { status: 'pending' });
    const channel = (await api.app.get(ChannelRepository).findById(sandboxChannel))!;
    const token = sandboxCheckoutToken(api.app.get(ChannelAdapters).channelConfig(channel).secret_key!, orderNo);
    const page = await api.app.inject({ method: 'GET', url: `/sandbox/checkout/${orderNo}?token=${token}` });
    expect(page.statusCode).toBe(404);
    const pay = await api.app.inject({
      method: 'POST',
      url: `/sandbox/checkout/${orderNo}/pay`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `token=${token}`,
    });
    expect(pay.statusCode).toBe(404);
    expect((await orderRow(api.app, orderNo)).status).toBe('pending');
  });

  it('a test merchant pays on the sandbox and never sees a live channel', async () => {
    const { merchant: test, channels } = await merchantWithChannels(api.operator);
    expect(test.api_key).toMatch(/^mk_test_[0-9A-Za-z]{24}$/);
    await linkBehindTheRules(db, test.id, epayChannel);
    expect((await createOrder(api.app, test, { cny_amount: '10.00', paychannel_id: epayChannel })).body.code).toBe(40301);
    expect(await listedChannels(api, test)).toEqual(Object.values(channels).sort((a, b) => a - b));
    expect((await createOrder(api.app, test, { cny_amount: '10.00', paychannel_id: channels.processor })).body.code).toBe(1);
  });
});

describe('SANDBOX_ENABLED=false: the sandbox does not exist', () => {
  let api: TestApi;
  let db: CallbackFixtures;
  let test: Credentials;
  let channel: number;

  beforeAll(async () => {
    api = await startTestApi({ SANDBOX_ENABLED: 'false' });
    db = await CallbackFixtures.connect(api.databaseUrl);
    ({
      merchant: test,
      channels: { processor: channel },
    } = await merchantWithChannels(api.operator));
  });
  afterAll(async () => {
    await db?.close();
    await api?.close();
  });

  it('orders on sandbox channels are refused 40301 and getPayChannels lists none', async () => {
    const res = await createOrder(api.app, test, { cny_amount: '10.00', paychannel_id: channel });
    expect([res.status, res.body.code]).toEqual([403, 40301]);
    expect(await listedChannels(api, test)).toEqual([]);
  });

  it('checkout pages answer 404 and sandbox notifications are refused, even for an order made while it was on', async () => {
    const { orderNo } = await db.insertOrder(test.id, channel, { status: 'pending' });
    const secret = api.app.get(ChannelAdapters).channelConfig((await api.app.get(ChannelRepository).findById(channel))!).secret_key!;
    const page = await api.app.inject({ method: 'GET', url: `/sandbox/checkout/${orderNo}?token=${sandboxCheckoutToken(secret, orderNo)}` });
    expect(page.statusCode).toBe(404);
    const notify = await api.app.inject({
      method: 'POST',
      url: `/api/channel/notify/${channel}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(signSandboxNotification(secret, orderNo, 10000, 'paid')),
    });
    expect([notify.statusCode, notify.json().code]).toEqual([400, 40000]);
    expect((await orderRow(api.app, orderNo)).status).toBe('pending');
  });
});

describe('the merchant-mode migration over existing rows', () => {
  it('makes every existing merchant live and keeps its api_key', async () => {
    const url = await createEmptyTestDatabase();
    const before = MIGRATIONS.slice(0, MIGRATIONS.indexOf(MerchantMode1764000100000));
    const ds = new DataSource({ ...dataSourceOptions(url, 1), migrations: before });
    await ds.initialize();
    try {
      await ds.runMigrations({ transaction: 'each' });
      await ds.query(`INSERT INTO merchants (name, api_key, api_secret_enc) VALUES ('old shop', 'mk_0123456789ABCDEFGHIJabcd', 'sealed')`);
    } finally {
      await ds.destroy();
    }
    expect(await runMigrations(url)).toContain('MerchantMode1764000100000');
    const after = new DataSource(dataSourceOptions(url, 1));
    await after.initialize();
    try {
      expect(await after.query(`SELECT api_key, mode FROM merchants`)).toEqual([{ api_key: 'mk_0123456789ABCDEFGHIJabcd', mode: 'live' }]);
      await expect(after.query(`UPDATE merchants SET mode = 'sandbox'`)).rejects.toThrow(/merchants_mode_check/);
    } finally {
      await after.destroy();
    }
  });
});
