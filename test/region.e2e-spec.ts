import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { REGION_PROVINCES, type Province, findRegionProblems } from '@app/region';
import type { RegionEntry, RegionTreeView } from '../apps/api/src/region/region.service';
import { type TestApi, startTestApi } from './helpers/api';

const BASE = '/addons/paychannel/channel/processor';

interface Envelope<T> {
  code: number;
  msg: string;
  time: string;
  data: T;
}

function url(operation: string, query: Record<string, string> = {}): string {
  const qs = new URLSearchParams(query).toString();
  return `${BASE}/${operation}${qs ? `?${qs}` : ''}`;
}

/** The served tree back in the committed data's shape, for the build's own validation. */
function treeToProvinces(tree: RegionTreeView): Province[] {
  return Object.entries(tree).map(([name, province]) => ({
    name,
    code: province.val,
    cities: Object.entries(province.items).map(([cityName, city]) => ({
      name: cityName,
      code: city.val,
      districts: Object.entries(city.items).map(([districtName, code]) => ({ name: districtName, code })),
    })),
  }));
}

describe('Region data (SPEC 4)', () => {
  let api: TestApi;

  async function get<T>(operation: string, query: Record<string, string> = {}, headers: Record<string, string> = {}) {
    const res = await api.app.inject({ method: 'GET', url: url(operation, query), headers });
    return { status: res.statusCode, headers: res.headers, raw: res.rawPayload, body: res.statusCode === 304 ? undefined : (res.json() as Envelope<T>) };
  }
  async function data<T>(operation: string, query: Record<string, string> = {}): Promise<T> {
    const res = await get<T>(operation, query);
    expect([res.status, res.body?.code]).toEqual([200, 1]);
    return res.body!.data;
  }

  let tree: RegionTreeView;

  beforeAll(async () => {
    // The agreement checks send ~400 requests from one address: the per-IP limit is tested on an app of its own.
    api = await startTestApi({ RATE_LIMIT_IP_PER_SECOND: '100000' });
    tree = await data<RegionTreeView>('regionData');
  });
  afterAll(() => api?.close());

  describe('the data', () => {
    it('has 31 provinces, 342 cities and 2846 districts, and passes the build validation as served', () => {
      const provinces = treeToProvinces(tree);
      const cities = provinces.flatMap((p) => p.cities);
      expect([provinces.length, cities.length, cities.flatMap((c) => c.districts).length]).toEqual([31, 342, 2846]);
      expect(findRegionProblems(provinces)).toEqual([]);
    });

    it('serves exactly the committed data file', () => {
      expect(treeToProvinces(tree)).toEqual(REGION_PROVINCES.map((p) => ({ name: p.name, code: p.code, cities: p.cities })));
    });

    it('keeps every municipality city level as the data names it', async () => {
      expect(await data('cityList', { province: '北京市' })).toEqual([{ name: '市辖区', code: '110100' }]);
      expect(await data('cityList', { province: '天津市' })).toEqual([{ name: '市辖区', code: '120100' }]);
      expect(await data('cityList', { province: '上海市' })).toEqual([{ name: '市辖区', code: '310100' }]);
      expect(await data('cityList', { province: '重庆市' })).toEqual([
        { name: '市辖区', code: '500100' },
        { name: '县', code: '500200' },
      ]);
      expect(Object.keys(tree['北京市'].items)).toEqual(['市辖区']);
      expect(tree['重庆市'].items['县'].val).toBe('500200');
    });

    it('names the direct-administered county levels verbatim', async () => {
      for (const [province, code, name] of [
        ['河南省', '419000', '省直辖县级行政区划'],
        ['湖北省', '429000', '省直辖县级行政区划'],
        ['海南省', '469000', '省直辖县级行政区划'],
        ['新疆维吾尔自治区', '659000', '自治区直辖县级行政区划'],
      ]) {
        expect(await data<RegionEntry[]>('cityList', { province })).toContainEqual({ name, code });
      }
    });

    it.each([
      ['广东省', '东莞市', '441900'],
      ['广东省', '中山市', '442000'],
      ['海南省', '儋州市', '460400'],
      ['甘肃省', '嘉峪关市', '620200'],
    ])('answers %s %s with no districts: items {} and districtList [] with code 1', async (province, city, code) => {
      expect(tree[province].items[city]).toEqual({ val: code, items: {} });
      const res = await get('districtList', { province, city });
      expect([res.status, res.body?.code, res.body?.data]).toEqual([200, 1, []]);
    });

    it('applies rules 3, 5 and 6: development zones and NBS-only units absent, MCA additions present', () => {
      const districts = new Map(
        treeToProvinces(tree).flatMap((p) => p.cities.flatMap((c) => c.districts.map((d) => [d.code, `${c.name} ${d.name}`] as const))),
      );
      for (const code of ['232761', '232762', '232763', '232764', '632857', '460321', '460322', '460323']) expect(districts.get(code)).toBeUndefined();
      expect(districts.get('460302')).toBe('三沙市 西沙区');
      expect(districts.get('460303')).toBe('三沙市 南沙区');
      expect(districts.get('653228')).toBe('和田地区 和康县');
      expect(districts.get('653229')).toBe('和田地区 和安县');
      expect([...districts.keys()].filter((code) => code[4] === '7')).toEqual([]);
      for (const code of ['441900', '442000', '460400', '620201']) expect(districts.has(code)).toBe(false);
    });

    it('agrees between the tree and the three lists for every province and city, in code order', async () => {
      const provinces = await data<RegionEntry[]>('provinceList');
      expect(provinces).toEqual(Object.entries(tree).map(([name, p]) => ({ name, code: p.val })));
      expect(provinces.map((p) => p.code)).toEqual(provinces.map((p) => p.code).sort());
      let districtCount = 0;
      for (const province of provinces) {
        const cities = await data<RegionEntry[]>('cityList', { province: province.name });
        expect([province.name, cities]).toEqual([province.name, Object.entries(tree[province.name].items).map(([name, c]) => ({ name, code: c.val }))]);
        const answers = await Promise.all(cities.map((city) => data<RegionEntry[]>('districtList', { province: province.name, city: city.name })));
        cities.forEach((city, i) => {
          const expected = Object.entries(tree[province.name].items[city.name].items).map(([name, code]) => ({ name, code }));
          expect([province.name, city.name, answers[i]]).toEqual([province.name, city.name, expected]);
          districtCount += answers[i].length;
        });
      }
      expect(districtCount).toBe(2846);
    });
  });

  describe('the envelope and HTTP', () => {
    it('wraps every answer in the envelope with a fixed start-up time and the contract headers', async () => {
      const a = await get<RegionEntry[]>('provinceList');
      const b = await get<RegionEntry[]>('cityList', { province: '浙江省' });
      expect(a.body).toEqual({ code: 1, msg: 'ok', time: expect.stringMatching(/^\d{10}$/), data: expect.any(Array) });
      expect(Math.abs(Number(a.body!.time) - Date.now() / 1000)).toBeLessThan(600);
      expect(b.body!.time).toBe(a.body!.time);
      expect(a.headers).toMatchObject({
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'public, max-age=86400',
        vary: 'Accept-Encoding',
        etag: expect.stringMatching(/^"[A-Za-z0-9_-]+"$/),
      });
      expect(a.headers['content-encoding']).toBeUndefined();
    });

    it('answers 304 to a matching If-None-Match, also weak or in a list, and 200 otherwise', async () => {
      const first = await get('regionData');
      const etag = String(first.headers.etag);
      for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const res = await get('regionData', {}, { 'if-none-match': ifNoneMatch });
        expect([ifNoneMatch, res.status, res.raw.length]).toEqual([ifNoneMatch, 304, 0]);
        expect(res.headers).toMatchObject({ etag, 'cache-control': 'public, max-age=86400', vary: 'Accept-Encoding' });
      }
      const changed = await get('regionData', {}, { 'if-none-match': '"something-else"' });
      expect([changed.status, changed.raw.equals(first.raw)]).toEqual([200, true]);
      // The tag of one list does not validate another.
      const other = await get('cityList', { province: '浙江省' }, { 'if-none-match': etag });
      expect(other.status).toBe(200);
    });

    it.each([
      ['regionData', {}],
      ['cityList', { province: '广东省' }],
    ])('sends %s as gzip and brotli that decode to the identity body, each with its own ETag', async (operation, query) => {
      const identity = await api.app.inject({ method: 'GET', url: url(operation, query) });
      const gzip = await api.app.inject({ method: 'GET', url: url(operation, query), headers: { 'accept-encoding': 'gzip' } });
      const br = await api.app.inject({ method: 'GET', url: url(operation, query), headers: { 'accept-encoding': 'gzip, deflate, br' } });
      expect([gzip.headers['content-encoding'], br.headers['content-encoding']]).toEqual(['gzip', 'br']);
      expect(gunzipSync(gzip.rawPayload).equals(identity.rawPayload)).toBe(true);
      expect(brotliDecompressSync(br.rawPayload).equals(identity.rawPayload)).toBe(true);
      expect(br.rawPayload.length).toBeLessThan(identity.rawPayload.length);
      expect(new Set([identity.headers.etag, gzip.headers.etag, br.headers.etag]).size).toBe(3);
      const revalidated = await api.app.inject({
        method: 'GET',
        url: url(operation, query),
        headers: { 'accept-encoding': 'br', 'if-none-match': String(br.headers.etag) },
      });
      expect(revalidated.statusCode).toBe(304);
    });

    it('honours q-values in Accept-Encoding', async () => {
      const cases: [string, string | undefined][] = [
        ['br;q=0, gzip', 'gzip'],
        ['gzip;q=0.5, br;q=0.8', 'br'],
        ['gzip;q=0.9, br;q=0.1', 'gzip'],
        ['identity', undefined],
        ['*', 'br'],
        ['br;q=0, gzip;q=0', undefined],
      ];
      for (const [accept, encoding] of cases) {
        const res = await api.app.inject({ method: 'GET', url: url('regionData'), headers: { 'accept-encoding': accept } });
        expect([accept, res.headers['content-encoding']]).toEqual([accept, encoding]);
      }
    });

    it('answers HEAD with the GET headers and no body', async () => {
      const full = await api.app.inject({ method: 'GET', url: url('regionData'), headers: { 'accept-encoding': 'br' } });
      const head = await api.app.inject({ method: 'HEAD', url: url('regionData'), headers: { 'accept-encoding': 'br' } });
      expect(head.statusCode).toBe(200);
      expect(head.rawPayload.length).toBe(0);
      for (const name of ['etag', 'content-type', 'content-encoding', 'cache-control', 'vary'])
        expect([name, head.headers[name]]).toEqual([name, full.headers[name]]);
      expect(Number(head.headers['content-length'])).toBe(full.rawPayload.length);
    });
  });

  describe('errors', () => {
    it.each<[string, Record<string, string>, string]>([
      ['cityList', {}, 'province'],
      ['cityList', { province: '' }, 'province'],
      ['districtList', { city: '市辖区' }, 'province'],
      ['districtList', { province: '北京市' }, 'city'],
      ['districtList', { province: '不存在', city: '' }, 'city'],
    ])('answers 40000 naming the missing parameter: %s %p', async (operation, query, field) => {
      const res = await get(operation, query);
      expect([res.status, res.body?.code]).toEqual([400, 40000]);
      expect(res.body?.data).toEqual({ errors: [{ field, message: expect.any(String) }] });
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    });

    it('answers 40000 for a parameter given twice', async () => {
      const res = await api.app.inject({
        method: 'GET',
        url: `${BASE}/cityList?province=${encodeURIComponent('北京市')}&province=${encodeURIComponent('北京市')}`,
      });
      expect([res.statusCode, res.json().code]).toEqual([400, 40000]);
    });

    it.each<[string, Record<string, string>]>([
      ['cityList', { province: '北京' }],
      ['cityList', { province: '北京市 ' }],
      ['cityList', { province: ' 北京市' }],
      ['cityList', { province: '110000' }],
      ['cityList', { province: '__proto__' }],
      ['cityList', { province: 'constructor' }],
      ['districtList', { province: '火星省', city: '市辖区' }],
      ['districtList', { province: '北京市', city: '北京市' }],
      ['districtList', { province: '广东省', city: '市辖区' }],
      ['districtList', { province: '河北省', city: '中山市' }],
      ['districtList', { province: '广东省', city: '广州' }],
      ['districtList', { province: '广东省', city: 'toString' }],
    ])('answers 40401 for a name that does not match exactly: %s %p', async (operation, query) => {
      const res = await get(operation, query);
      expect([res.status, res.body?.code, res.body?.data]).toEqual([404, 40401, null]);
      expect(res.headers.etag).toBeUndefined();
    });

    it('refuses other methods with 40500', async () => {
      const res = await api.app.inject({ method: 'POST', url: url('provinceList') });
      expect([res.statusCode, res.json().code]).toEqual([405, 40500]);
    });

    it('is not under the merchant API prefix', async () => {
      const res = await api.app.inject({ method: 'GET', url: `/api${BASE}/provinceList` });
      expect([res.statusCode, res.json().code]).toEqual([404, 40402]);
    });

    it('answers HEAD of a failing request with the error status and no body', async () => {
      const res = await api.app.inject({ method: 'HEAD', url: url('cityList', { province: '火星省' }) });
      expect([res.statusCode, res.rawPayload.length, res.headers['content-type']]).toEqual([404, 0, 'application/json; charset=utf-8']);
    });
  });

  // The routes are answered from the adapter's first request hook, ahead of the app's own hooks: what those gave every answer must still be there.
  describe('what every other route gets', () => {
    const requestId = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

    it('sets a fresh X-Request-Id on answers, 304s and errors', async () => {
      const ok = await get('cityList', { province: '浙江省' });
      const notModified = await get('cityList', { province: '浙江省' }, { 'if-none-match': String(ok.headers.etag) });
      const missing = await get('cityList');
      const unknown = await get('districtList', { province: '浙江省', city: '不存在' });
      const head = await api.app.inject({ method: 'HEAD', url: url('provinceList') });
      const ids = [ok, notModified, missing, unknown].map((r) => r.headers['x-request-id']).concat(head.headers['x-request-id']);
      expect([ok.status, notModified.status, missing.status, unknown.status, head.statusCode]).toEqual([200, 304, 400, 404, 200]);
      for (const id of ids) expect(id).toMatch(requestId);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('counts answers in /metrics by route pattern and status', async () => {
      const counted = async (code: number): Promise<number> => {
        const metrics = (await api.app.inject({ method: 'GET', url: '/metrics' })).body;
        const line = metrics
          .split('\n')
          .find((l) => l.startsWith(`merchant_pay_http_requests_total{method="GET",route="${BASE}/districtList",code="${code}"}`));
        return Number(line?.split(' ')[1] ?? 0);
      };
      const before = [await counted(200), await counted(404)];
      await get('districtList', { province: '广东省', city: '广州市' });
      await get('districtList', { province: '广东省', city: '广州市' });
      await get('districtList', { province: '广东省', city: '不存在' });
      expect([await counted(200), await counted(404)]).toEqual([before[0] + 2, before[1] + 1]);
    });

    it('answers a path spelled with percent escapes as the plain one, by the route itself', async () => {
      const plain = await get('cityList', { province: '广东省' });
      const escaped = await api.app.inject({ method: 'GET', url: `${BASE}/city%4Cist?province=${encodeURIComponent('广东省')}` });
      expect([escaped.statusCode, escaped.headers.etag, escaped.rawPayload.equals(plain.raw)]).toEqual([200, plain.headers.etag, true]);
      expect(escaped.headers['x-request-id']).toMatch(requestId);
      const missing = await api.app.inject({ method: 'GET', url: `${BASE}/city%4Cist` });
      expect([missing.statusCode, missing.json().code]).toEqual([400, 40000]);
    });
  });
});

describe('Region rate limit per client IP (SPEC 8)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ RATE_LIMIT_IP_PER_SECOND: '5' });
  });
  afterAll(() => api?.close());

  const fire = (count: number, remoteAddress: string) =>
    Promise.all(Array.from({ length: count }, () => api.app.inject({ method: 'GET', url: url('provinceList'), remoteAddress })));

  it('answers 42900 with Retry-After past the limit, per address, and lets the address in again a second later', async () => {
    const burst = await fire(8, '198.51.100.7');
    const limited = burst.filter((r) => r.statusCode === 429);
    expect(burst.filter((r) => r.statusCode === 200)).toHaveLength(5);
    expect(limited).toHaveLength(3);
    for (const res of limited) {
      expect(res.json()).toEqual({ code: 42900, msg: expect.any(String), time: expect.any(String), data: null });
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    const other = await fire(1, '198.51.100.8');
    expect(other[0].statusCode).toBe(200);

    // clock: Retry-After is honest, a request after that many seconds is let in
    await new Promise((resolve) => setTimeout(resolve, Number(limited[0].headers['retry-after']) * 1000 + 50));
    expect((await fire(1, '198.51.100.7'))[0].statusCode).toBe(200);
  });

  it('counts every region request of an address, HEAD, failures and other spellings of the path included', async () => {
    const remoteAddress = '198.51.100.9';
    const answers = [
      await api.app.inject({ method: 'HEAD', url: url('provinceList'), remoteAddress }),
      await api.app.inject({ method: 'GET', url: url('cityList'), remoteAddress }),
      await api.app.inject({ method: 'GET', url: url('cityList', { province: '火星省' }), remoteAddress }),
      await api.app.inject({ method: 'GET', url: `${BASE}/province%4Cist`, remoteAddress }),
      await api.app.inject({ method: 'GET', url: url('regionData'), remoteAddress }),
      await api.app.inject({ method: 'GET', url: url('districtList', { province: '北京市', city: '市辖区' }), remoteAddress }),
    ];
    expect(answers.map((r) => r.statusCode)).toEqual([200, 400, 404, 200, 200, 429]);
    expect(answers[5].json()).toEqual({ code: 42900, msg: expect.any(String), time: expect.any(String), data: null });
    expect(answers[5].headers).toMatchObject({ 'content-type': 'application/json; charset=utf-8', 'retry-after': expect.stringMatching(/^[1-9]\d*$/) });
    expect(answers[5].headers['x-request-id']).toEqual(expect.any(String));
    expect(answers[5].headers.etag).toBeUndefined();
  });
});
