import { type Credentials } from '@app/operator';
import { type TestApi, post, signed, startTestApi } from './helpers/api';

const URL = '/api/merchant/getPayChannels';
const SECRET_CONFIG = {
  merchant_no: 'MNO-4711-secret',
  secret_key: 'channel-secret-key-9f8e7d',
  proxy_url: 'http://proxy-user:proxy-pass@10.9.8.7:3128',
  gateway_url: 'https://gateway.example.test/submit.php',
};

describe('getPayChannels', () => {
  let api: TestApi;
  let merchant: Credentials;
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    api = await startTestApi();
    merchant = await api.operator.merchants.create({ name: 'shop' });
    const other = await api.operator.merchants.create({ name: 'other shop' });
    const make = async (key: string, category: string, payMethod: string, link: Credentials | null) => {
      const { id } = await api.operator.channels.create({
        category,
        name: `${key} channel`,
        payMethod,
        adapter: 'epay',
        rate: '0.006',
        config: JSON.stringify(SECRET_CONFIG),
      });
      if (link) await api.operator.channels.link(link.id, id);
      ids[key] = id;
    };
    await make('proc', 'processor', 'bank,alipay', merchant);
    await make('remote', 'remotepay', 'wxpay,alipay,bank', merchant);
    await make('ware', 'warehouse', 'alipay', merchant);
    await make('disabled', 'remotepay', 'alipay', merchant);
    await make('unlinked', 'remotepay', 'alipay', null);
    await make('foreign', 'processor', 'alipay', other);
    await api.operator.channels.setEnabled(ids.disabled, false);
  });
  afterAll(() => api.close());

  it('lists the linked, enabled channels by id with exactly the interface fields and texts', async () => {
    const res = await post<{ list: Record<string, unknown>[]; total: number }>(api.app, URL, signed(merchant));
    expect(res.body.code).toBe(1);
    expect(res.body.data.total).toBe(3);
    expect(res.body.data.list.map((c) => c.id)).toEqual([ids.proc, ids.remote, ids.ware]);
    const [proc, remote, ware] = res.body.data.list;
    expect(Object.keys(proc).sort()).toEqual(['category', 'category_text', 'createtime', 'id', 'name', 'pay_method', 'pay_method_text', 'updatetime'].sort());
    expect(proc).toMatchObject({ category: 'processor', category_text: 'Payment processor', pay_method: 'bank,alipay', pay_method_text: 'Bank card, Alipay' });
    expect(remote).toMatchObject({ category_text: 'Third-party payment', pay_method_text: 'WeChat Pay, Alipay, Bank card' });
    expect(ware).toMatchObject({ category_text: 'Cloud-warehouse payment', pay_method_text: 'Alipay' });
    expect(typeof proc.createtime).toBe('number');
  });

  it('never shows anything from the sensitive config', async () => {
    const res = await post(api.app, URL, signed(merchant));
    for (const value of Object.values(SECRET_CONFIG)) expect(res.raw).not.toContain(value);
    for (const key of ['merchant_no', 'secret_key', 'proxy', 'gateway', 'config', 'adapter', 'rate', 'enabled']) {
      expect(res.raw).not.toContain(key);
    }
  });

  it('filters by category from the body or the query string', async () => {
    const body = await post<{ list: { id: number }[]; total: number }>(api.app, URL, signed(merchant, { category: 'remotepay' }));
    expect(body.body.data.list.map((c) => c.id)).toEqual([ids.remote]);
    const query = { category: 'warehouse' };
    const res = await post<{ list: { id: number }[] }>(api.app, `${URL}?category=warehouse`, signed(merchant, {}, query));
    expect(res.body.data.list.map((c) => c.id)).toEqual([ids.ware]);
  });

  it('answers 40000 naming the field for an unknown category', async () => {
    for (const category of ['bogus', 7, ['processor']]) {
      const res = await post<{ errors: { field: string }[] }>(api.app, URL, signed(merchant, { category }));
      expect([res.status, res.body.code]).toEqual([400, 40000]);
      expect(res.body.data.errors[0].field).toBe('category');
    }
  });

  it('answers an empty list when the merchant has no channel in that category', async () => {
    const lonely = await api.operator.merchants.create({ name: 'lonely' });
    const res = await post<{ list: unknown[]; total: number }>(api.app, URL, signed(lonely));
    expect(res.body).toMatchObject({ code: 1, data: { list: [], total: 0 } });
  });
});
