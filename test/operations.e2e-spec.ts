import { Client } from 'pg';
import { OrderLifecycle } from '@app/orders';
import { createApiApp } from '../apps/api/src/create-api-app';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { waitFor } from './helpers/callbacks';
import { databaseUrl } from './helpers/database';
import { createOrder, orderRow } from './helpers/orders';
import { removeTestKeys } from './helpers/redis-keys';

describe('health, readiness and metrics', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  it('is ready while the database and the queue answer', async () => {
    const res = await api.app.inject({ method: 'GET', url: '/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'ok', info: { database: { status: 'up' }, queue: { status: 'up' } } });
  });

  it('exports request counts and latency by route pattern and status code, and the queue depth', async () => {
    await api.app.inject({ method: 'GET', url: '/health' });
    await api.app.inject({ method: 'GET', url: '/no/such/route' });
    // The queue and delivery gauges come from a refresh started at start-up, off the scrape's path.
    const res = await waitFor(
      async () => {
        const scrape = await api.app.inject({ method: 'GET', url: '/metrics' });
        return scrape.body.includes('merchant_pay_cached_gauge_refreshes_total{outcome="ok"} 1') ? scrape : null;
      },
      5_000,
      'the first refresh of the cached gauges',
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.body).toMatch(/merchant_pay_http_requests_total\{method="GET",route="\/health",code="200"\} [1-9]/);
    expect(res.body).toMatch(/merchant_pay_http_requests_total\{method="GET",route="unmatched",code="404"\} [1-9]/);
    expect(res.body).toContain('merchant_pay_http_request_duration_seconds_bucket');
    expect(res.body).toMatch(/merchant_pay_queue_jobs\{queue="orders",state="waiting"\} \d+/);
    expect(res.body).toMatch(/merchant_pay_callback_deliveries\{status="failed"\} \d+/);
    expect(res.body).toMatch(/merchant_pay_callback_circuits_open \d+/);
    expect(res.body).toMatch(/merchant_pay_callback_held_deliveries \d+/);
    expect(res.body).toContain('merchant_pay_orders_created_total');
  });

  it('shows in its gauges the jobs and deliveries there are at its refresh', async () => {
    const sample = (body: string, series: string) =>
      Number(
        body
          .split('\n')
          .find((l) => l.startsWith(`${series} `))
          ?.slice(series.length + 1),
      );
    // Two orders paid on the API alone as epay's are (not final): each leaves one confirmation job waiting (no worker here) and one pending order.paid callback.
    const { merchant, channels } = await merchantWithChannels(api.operator, { notifyUrl: 'https://merchant.example/notify' });
    for (const merchantOrderNo of ['gauges-1', 'gauges-2']) {
      const created = await createOrder(api.app, merchant, { cny_amount: '10.00', paychannel_id: channels.remotepay, merchant_order_no: merchantOrderNo });
      const row = await orderRow(api.app, created.body.data.order_no);
      expect(await api.app.get(OrderLifecycle).markPaid(String(row.id), { amountFen: 1000, channelTradeNo: `T-${merchantOrderNo}` }, { final: false })).toBe(
        'paid',
      );
    }
    // A second API on the same database and queue: its start-up refresh reads them, where this one's figures are 10 s fresh.
    const second = await createApiApp(api.config);
    try {
      const body = await waitFor(
        async () => {
          const scrape = (await second.inject({ method: 'GET', url: '/metrics' })).body;
          return scrape.includes('merchant_pay_cached_gauge_refreshes_total{outcome="ok"} 1') ? scrape : null;
        },
        5_000,
        'the refresh of the second API',
      );
      expect(sample(body, 'merchant_pay_queue_jobs{queue="orders",state="waiting"}')).toBe(2);
      expect(sample(body, 'merchant_pay_queue_jobs{queue="orders",state="active"}')).toBe(0);
      expect(sample(body, 'merchant_pay_callback_deliveries{status="pending"}')).toBe(2);
      expect(sample(body, 'merchant_pay_callback_deliveries{status="failed"}')).toBe(0);
      expect(sample(body, 'merchant_pay_callback_circuits_open')).toBe(0);
      expect(sample(body, 'merchant_pay_callback_held_deliveries')).toBe(0);
    } finally {
      await second.close();
    }
  });

  it('counts created orders, not idempotent repeats', async () => {
    const count = async () => Number(/merchant_pay_orders_created_total (\d+)/.exec((await api.app.inject({ method: 'GET', url: '/metrics' })).body)?.[1]);
    const before = await count();
    const { merchant, channels } = await merchantWithChannels(api.operator);
    const params = { order_type: 1, cny_amount: '10.00', paychannel_id: channels.remotepay, paychannel_paymethod: 'alipay', merchant_order_no: 'metrics-1' };
    expect((await post(api.app, '/api/merchant/createOrder', signed(merchant, params))).body.code).toBe(1);
    expect((await post(api.app, '/api/merchant/createOrder', signed(merchant, params))).body.code).toBe(1);
    expect(await count()).toBe(before + 1);
  });

  it('answers /ready with 503 once its database is gone, while /health stays 200', async () => {
    const name = new URL(api.databaseUrl).pathname.slice(1);
    // The nonces' owners are read from the database about to go: their keys go first.
    await removeTestKeys(api.config.queuePrefix, api.databaseUrl);
    const admin = new Client({ connectionString: databaseUrl('postgres') });
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE "${name}" WITH (FORCE)`);
    } finally {
      await admin.end();
    }
    const res = await api.app.inject({ method: 'GET', url: '/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ status: 'error', error: { database: { status: 'down' } } });
    expect((await api.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });
});

describe('queue dashboard', () => {
  it('is behind basic auth when ADMIN_USER and ADMIN_PASSWORD are set', async () => {
    const api = await startTestApi({ ADMIN_USER: 'ops', ADMIN_PASSWORD: 'pa55-word' });
    try {
      const none = await api.app.inject({ method: 'GET', url: '/admin/queues' });
      expect(none.statusCode).toBe(401);
      expect(none.headers['www-authenticate']).toContain('Basic');
      const wrong = await api.app.inject({
        method: 'GET',
        url: '/admin/queues/api/queues',
        headers: { authorization: `Basic ${Buffer.from('ops:nope').toString('base64')}` },
      });
      expect(wrong.statusCode).toBe(401);
      const auth = { authorization: `Basic ${Buffer.from('ops:pa55-word').toString('base64')}` };
      const page = await api.app.inject({ method: 'GET', url: '/admin/queues', headers: auth });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('<html');
      const queues = await api.app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: auth });
      expect(queues.statusCode).toBe(200);
      expect(queues.body).toContain('orders');
    } finally {
      await api.close();
    }
  });

  it('is not mounted without credentials configured', async () => {
    const api = await startTestApi();
    try {
      const res = await api.app.inject({ method: 'GET', url: '/admin/queues' });
      expect([res.statusCode, res.json().code]).toEqual([404, 40402]);
    } finally {
      await api.close();
    }
  });
});

describe('OpenAPI document', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  it('lists every merchant and region operation and documents the envelope, the codes and the signature', async () => {
    const res = await api.app.inject({ method: 'GET', url: '/docs-json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json() as { paths: Record<string, Record<string, unknown>>; info: { description: string } };
    for (const op of [
      'createOrder',
      'orderQueryList',
      'orderQueryDetail',
      'getPayChannels',
      'callbackResend',
      'callbackQueryList',
      'callbackRecover',
      'callbackTest',
      'orderClose',
      'refundCreate',
      'refundQuery',
      'refundQueryList',
      'createSellOrder',
      'statementQuery',
    ]) {
      expect(doc.paths[`/api/merchant/${op}`]?.post).toBeDefined();
    }
    for (const op of ['regionData', 'provinceList', 'cityList', 'districtList']) {
      expect(doc.paths[`/addons/paychannel/channel/processor/${op}`]?.get).toBeDefined();
    }
    const schemas = (doc as unknown as { components: { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> } }).components
      .schemas;
    expect(Object.keys(schemas.CreateOrderDto.properties)).toEqual(
      expect.arrayContaining(['order_type', 'cny_amount', 'paychannel_id', 'paychannel_paymethod', 'customer_name', 'notify_url', 'merchant_order_no']),
    );
    expect(schemas.CreateOrderDto.required).toEqual(expect.arrayContaining(['order_type', 'cny_amount', 'paychannel_id', 'paychannel_paymethod']));
    expect(Object.keys(schemas.SignedParamsDoc.properties).sort()).toEqual(['api_key', 'nonce', 'signature', 'timestamp']);
    expect(Object.keys(schemas.OrderQueryListDto.properties)).toEqual(
      expect.arrayContaining(['page', 'limit', 'status', 'order_type', 'start_time', 'end_time']),
    );
    const cityList = doc.paths['/addons/paychannel/channel/processor/cityList'].get as { parameters: { name: string }[] };
    expect(cityList.parameters.map((p) => p.name)).toContain('province');
    expect(Object.keys(schemas.RefundCreateDto.properties).sort()).toEqual(['merchant_refund_no', 'notify_url', 'order_no', 'reason', 'refund_amount']);
    expect(schemas.RefundCreateDto.required).toEqual(expect.arrayContaining(['order_no', 'refund_amount', 'merchant_refund_no']));
    expect(Object.keys(schemas.RefundQueryDto.properties).sort()).toEqual(['merchant_refund_no', 'refund_no']);
    expect(Object.keys(schemas.CreateSellOrderDto.properties).sort()).toEqual(
      ['cny_amount', 'merchant_order_no', 'notify_url', 'paychannel_id', 'payee_account', 'payee_bank', 'payee_name'].sort(),
    );
    expect(schemas.CreateSellOrderDto.required).toEqual(expect.arrayContaining(['cny_amount', 'paychannel_id', 'payee_name', 'payee_account', 'payee_bank']));
    expect(Object.keys(schemas.CallbackQueryListDto.properties)).toEqual(['order_no']);
    expect(Object.keys(schemas.CallbackRecoverDto.properties).sort()).toEqual(['end_time', 'start_time']);
    expect(schemas.CallbackRecoverDto.required).toEqual(['start_time']);
    expect(Object.keys(schemas.CallbackTestDto.properties)).toEqual(['url']);
    for (const code of ['40000', '40104', '40900', '40901', '40902', '42900', '50200', '50300']) expect(doc.info.description).toContain(`| ${code} |`);
    expect(doc.info.description).toMatch(/canonical string[\s\S]*api_key=mk_example/);
    const page = await api.app.inject({ method: 'GET', url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('swagger');
  });

  it("/docs keeps working: its inline scripts are not under the HTML pages' policy", async () => {
    for (const url of ['/docs', '/docs/swagger-ui-init.js', '/docs/swagger-ui-bundle.js']) {
      const res = await api.app.inject({ method: 'GET', url });
      expect([url, res.statusCode]).toEqual([url, 200]);
      expect(res.headers['content-security-policy']).toBeUndefined();
    }
  });

  it('documents each region operation with its required query parameters', async () => {
    const doc = (await api.app.inject({ method: 'GET', url: '/docs-json' })).json() as {
      paths: Record<string, { get: { operationId: string; tags: string[]; parameters: { name: string; in: string; required: boolean }[] } }>;
    };
    const parameters = (op: string) => doc.paths[`/addons/paychannel/channel/processor/${op}`].get.parameters.map((p) => [p.name, p.in, p.required]);
    expect(parameters('regionData')).toEqual([]);
    expect(parameters('provinceList')).toEqual([]);
    expect(parameters('cityList')).toEqual([['province', 'query', true]]);
    expect(parameters('districtList')).toEqual([
      ['province', 'query', true],
      ['city', 'query', true],
    ]);
    expect(doc.paths['/addons/paychannel/channel/processor/cityList'].get).toMatchObject({ operationId: 'RegionController_cityList', tags: ['region'] });
  });
});

describe('TRUST_PROXY', () => {
  const provinceList = (api: TestApi, from: string, forwardedFor?: string) =>
    api.app.inject({
      method: 'GET',
      url: '/addons/paychannel/channel/processor/provinceList',
      remoteAddress: from,
      headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
    });

  it('with one hop, the client is the address the proxy appended: a chain the client wrote itself does not escape the per-IP limit', async () => {
    const api = await startTestApi({ RATE_LIMIT_IP_PER_SECOND: '2', TRUST_PROXY: '1' });
    try {
      // The balancer (10.0.0.2) appends the address it saw; everything left of it is the client's own text.
      const spoofing = [];
      for (let i = 0; i < 4; i++) spoofing.push(await provinceList(api, '10.0.0.2', `198.51.100.${i}, 203.0.113.1`));
      expect(spoofing.map((r) => r.statusCode)).toEqual([200, 200, 429, 429]);
      expect((await provinceList(api, '10.0.0.2', '203.0.113.2')).statusCode).toBe(200);
    } finally {
      await api.close();
    }
  });

  it('with a CIDR list, only a listed proxy is believed; a client naming itself directly is limited by its own address', async () => {
    const api = await startTestApi({ RATE_LIMIT_IP_PER_SECOND: '2', TRUST_PROXY: '10.0.0.0/8' });
    try {
      const direct = [];
      for (let i = 0; i < 3; i++) direct.push(await provinceList(api, '192.0.2.9', `198.51.100.${i}`));
      expect(direct.map((r) => r.statusCode)).toEqual([200, 200, 429]);
      // Through the listed proxy, each forwarded client has its own budget, even when it prepends a chain of its own.
      expect((await provinceList(api, '10.1.2.3', '203.0.113.7')).statusCode).toBe(200);
      expect((await provinceList(api, '10.1.2.3', '192.0.2.9, 203.0.113.8')).statusCode).toBe(200);
      expect((await provinceList(api, '10.1.2.3', '192.0.2.9, 203.0.113.8')).statusCode).toBe(200);
      expect((await provinceList(api, '10.1.2.3', '192.0.2.9, 203.0.113.8')).statusCode).toBe(429);
    } finally {
      await api.close();
    }
  });
});
