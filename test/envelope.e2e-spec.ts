import { type TestApi, startTestApi } from './helpers/api';

describe('envelope on every failure', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: string, contentType?: string) {
    const res = await api.app.inject({ method, url, payload, headers: contentType ? { 'content-type': contentType } : {} });
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['code', 'data', 'msg', 'time']);
    expect(body.time).toMatch(/^\d{10}$/);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    return { status: res.statusCode, body, headers: res.headers };
  }

  it('answers 40402 for an unknown route', async () => {
    const res = await call('GET', '/no/such/route');
    expect([res.status, res.body.code]).toEqual([404, 40402]);
    expect((await call('POST', '/api/merchant/noSuchOperation', '{}', 'application/json')).body.code).toBe(40402);
  });

  it('answers 40500 with Allow for a wrong method on a known route', async () => {
    const res = await call('GET', '/api/merchant/getPayChannels');
    expect([res.status, res.body.code]).toEqual([405, 40500]);
    expect(res.headers.allow).toContain('POST');
    expect((await call('DELETE', '/api/merchant/getPayChannels')).body.code).toBe(40500);
  });

  it('answers 40000 for malformed JSON, a JSON array and a prototype-polluting key', async () => {
    for (const payload of ['{"api_key":', '[1,2]', '"text"', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}']) {
      const res = await call('POST', '/api/merchant/getPayChannels', payload, 'application/json');
      expect([payload, res.status, res.body.code]).toEqual([payload, 400, 40000]);
    }
  });

  it('answers 41300 for a body over 64 KiB', async () => {
    const payload = JSON.stringify({ filler: 'x'.repeat(64 * 1024) });
    const res = await call('POST', '/api/merchant/getPayChannels', payload, 'application/json');
    expect([res.status, res.body.code]).toEqual([413, 41300]);
  });

  it('answers 41500 for a body that is neither JSON nor a form', async () => {
    for (const type of ['text/plain', 'application/xml', 'multipart/form-data; boundary=x']) {
      const res = await call('POST', '/api/merchant/getPayChannels', 'x=1', type);
      expect([type, res.status, res.body.code]).toEqual([type, 415, 41500]);
    }
  });

  it('carries a request id on every answer', async () => {
    const res = await api.app.inject({ method: 'GET', url: '/nowhere' });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers /health with 200 while the process is up', async () => {
    const res = await api.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
  });
});
