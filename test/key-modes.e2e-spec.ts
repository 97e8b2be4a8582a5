import { createHash, randomBytes } from 'node:crypto';
import { ChannelAdapters } from '@app/channels';
import { ChannelRepository } from '@app/db';
import { RefundLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { runCli } from '../apps/cli/src/main';
import { FakeAlipayGateway, rsaKeyPair } from './fakes/alipay-gateway';
import { FakeWechatpayGateway } from './fakes/wechatpay-gateway';
import { type TestApi, startTestApi } from './helpers/api';
import { waitFor } from './helpers/callbacks';
import { openCashier } from './helpers/cashier';
import { freePort } from './helpers/free-port';
import { refundCreate, refundRow } from './helpers/money-out';
import { createOrder, orderRow } from './helpers/orders';

const APP_ID = '2021004100000002';
const MCHID = '1900000110';
const APPID = 'wxd678efh567hg6788';
const SERIAL = '4775B6A45ACD588826D15E583A95F5DD2D5F7772';

/** A PEM's bare base64, as Alipay's key tool and the consoles show a key. */
const bare = (pem: string): string => pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');

/**
 * SPEC 6 Key modes, end to end: an Alipay app in public-key-certificate mode and a WeChat Pay
 * account with platform certificates only, each channel created with the operator CLI
 * (channel:create, keys pasted as the consoles show them), each taking a payment through the
 * cashier; WeChat's certificates rotated between two payments.
 */
describe('key modes: Alipay certificates and WeChat platform certificates, created with the CLI (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let alipay: FakeAlipayGateway;
  let wechat: FakeWechatpayGateway;
  const appKeys = rsaKeyPair();
  const merchantKey = rsaKeyPair();
  const apiV3Key = randomBytes(16).toString('hex');

  beforeAll(async () => {
    const port = await freePort();
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
    await api.app.listen(port, '127.0.0.1');
    alipay = await new FakeAlipayGateway(APP_ID, appKeys.publicKey, { appPrivateKey: appKeys.privateKey }).start();
    wechat = await new FakeWechatpayGateway(MCHID, APPID, SERIAL, merchantKey.publicKey, apiV3Key).start();
    wechat.signWith = 'certificate';
    merchant = await api.operator.merchants.create({ name: 'key modes shop' });
  });
  afterAll(async () => {
    await api.close();
    await alipay.stop();
    await wechat.stop();
  });
  afterEach(() => {
    expect(alipay.rejected).toEqual([]);
    expect(wechat.rejected).toEqual([]);
  });

  /** The operator CLI on the test's database, as `npm run cli --` runs it. */
  async function cli(...argv: string[]): Promise<Record<string, unknown>> {
    let out = '';
    let err = '';
    const code = await runCli(argv, {
      env: {
        DATABASE_URL: api.databaseUrl,
        MASTER_KEY: createHash('sha256').update(`master key of ${api.databaseUrl}`).digest('base64'),
        CHANNEL_ALLOW_HTTP: 'true',
        LOG_LEVEL: 'silent',
      },
      stdout: (t) => (out += t),
      stderr: (t) => (err += t),
    });
    expect([code, err]).toEqual([0, '']);
    return JSON.parse(out) as Record<string, unknown>;
  }

  async function channelFromCli(adapter: 'alipay' | 'wechatpay', config: Record<string, unknown>): Promise<number> {
    const { id } = await cli(
      'channel:create',
      '--category',
      'processor',
      '--name',
      adapter,
      '--pay-method',
      adapter === 'alipay' ? 'alipay' : 'wxpay',
      '--adapter',
      adapter,
      '--rate',
      '0.006',
      '--config',
      JSON.stringify(config),
    );
    await cli('channel:link', '--merchant', String(merchant.id), '--channel', String(id));
    return id as number;
  }

  it("Alipay public-key-certificate mode: requests carry the SNs alipay-sdk computes, answers and notifications verify with Alipay's certificate", async () => {
    const certificates = alipay.certificates!;
    const channel = await channelFromCli('alipay', {
      app_id: APP_ID,
      // Alipay's key tool shows the app private key as bare base64.
      private_key: bare(appKeys.privateKey),
      app_cert: certificates.appCert,
      alipay_cert: certificates.alipayCert,
      alipay_root_cert: certificates.rootCert,
      gateway: alipay.gateway,
    });
    const res = await createOrder(api.app, merchant, { cny_amount: '15.00', paychannel_id: channel });
    const orderNo = res.body.data.order_no;
    const { cashier, provider } = await openCashier(res.body.data.pay_url!);
    expect(provider).toContain('<button>Pay</button>');
    const params = new URL(/href="([^"]+)"/.exec(cashier.slice(cashier.indexOf('id="pay"')))![1].replace(/&amp;/g, '&')).searchParams;
    expect([params.get('app_cert_sn'), params.get('alipay_root_cert_sn')]).toEqual([alipay.sns!.appCertSn, alipay.sns!.alipayRootCertSn]);

    const delivery = alipay.pay(orderNo);
    await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    expect(delivery.answers[0]).toEqual({ status: 200, body: 'success' });
    expect((await orderRow(api.app, orderNo)).status).toBe('completed');

    // Money out in certificate mode: refund and its answer (naming alipay_cert_sn), verified with the certificate.
    const refund = await refundCreate(api.app, merchant, { order_no: orderNo, refund_amount: '5.00', merchant_refund_no: `cert-${orderNo}` });
    await api.app.get(RefundLifecycle).process((await refundRow(api.app, refund.body.data.refund_no)).id as string);
    expect((await refundRow(api.app, refund.body.data.refund_no)).status).toBe('succeeded');

    // Alipay renewed its certificate: answers name another SN than this channel's alipay_cert; the operator is told to download it.
    alipay.alipayCertSnAnswered = 'f'.repeat(32);
    try {
      const adapter = api.app.get(ChannelAdapters).forChannel((await api.app.get(ChannelRepository).findById(channel))!);
      await expect(adapter.queryPayment({ orderNo, amountFen: 1500, channelTradeNo: null, paidAt: null }, AbortSignal.timeout(5000))).rejects.toThrow(
        /answered signed with certificate f{32}, not config.alipay_cert \([0-9a-f]{32}\): download Alipay's current certificate/,
      );
    } finally {
      alipay.alipayCertSnAnswered = null;
    }
  });

  it('WeChat Pay platform-certificate mode: certificates fetched and decrypted, chosen by Wechatpay-Serial, a rotation picked up between two payments', async () => {
    const channel = await channelFromCli('wechatpay', {
      mchid: MCHID,
      appid: APPID,
      merchant_serial_no: SERIAL,
      private_key: merchantKey.privateKey,
      apiv3_key: apiV3Key,
      gateway: wechat.url,
    });
    const pay = async (amount: string): Promise<string> => {
      const res = await createOrder(api.app, merchant, { cny_amount: amount, paychannel_id: channel, paychannel_paymethod: 'wxpay' });
      // The cashier asks for the Native trade: its signed answer is checked against the fetched certificates.
      expect((await openCashier(res.body.data.pay_url!)).cashier).toContain('<svg');
      const delivery = wechat.pay(res.body.data.order_no)!;
      await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
      expect(delivery.answers[0].status).toBe(204);
      expect((await orderRow(api.app, res.body.data.order_no)).status).toBe('completed');
      return res.body.data.order_no;
    };
    const before = wechat.certificate.serial;
    await pay('21.00');
    expect(wechat.certificateDownloads).toBe(1);

    // WeChat issues a new certificate and signs with it: the unknown serial has the list fetched again, once.
    expect(wechat.rotateCertificate().serial).not.toBe(before);
    await pay('22.00');
    expect(wechat.certificateDownloads).toBe(2);
    await pay('23.00');
    expect(wechat.certificateDownloads).toBe(2);

    // Notifications naming serials WeChat never issued: refused; an unknown serial fetches the list at most once a minute, and
    // this minute's was the rotation's.
    const forged = wechat.notification('TRANSACTION.SUCCESS', 'transaction', {
      mchid: MCHID,
      appid: APPID,
      out_trade_no: '1',
      trade_state: 'SUCCESS',
      amount: { total: 1 },
    });
    for (let i = 0; i < 3; i++) {
      const answer = await wechat.post(`${api.config.publicBaseUrl}/api/channel/notify/${channel}`, {
        ...forged,
        headers: { ...forged.headers, 'wechatpay-serial': `${'0'.repeat(30)}${i}` },
      });
      expect(answer.status).toBe(401);
    }
    expect(wechat.certificateDownloads).toBe(2);
  });
});
