import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { type TestApi, startTestApi } from './helpers/api';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '..');
/** Runs a package's script with this node; its exit status and output, whether it succeeded or not. */
const node = (script: string, args: string[], options: { env?: Record<string, string>; cwd?: string } = {}) =>
  run(process.execPath, [join(ROOT, script), ...args], { cwd: options.cwd ?? ROOT, env: { ...process.env, ...options.env }, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ status: 0, stdout, stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ status: err.code ?? -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }),
  );

/** The warnings redocly.yaml keeps, each with its reason there; any other warning fails. */
const KEPT_WARNINGS = ['operation-4xx-response #/paths/~1health/get/responses', 'operation-4xx-response #/paths/~1ready/get/responses'];

/** What a client written against the generated types does; the expect-error lines must stay errors. */
const CLIENT = `
import type { paths } from './schema';

type Body<P extends keyof paths> = paths[P] extends { post: { requestBody: { content: { 'application/json': infer B } } } } ? B : never;
type ErrorCode<P extends keyof paths, S extends number> = paths[P] extends { post: { responses: Record<S, { content: { 'application/json': { code: infer C } } }> } } ? C : never;

const auth = { api_key: 'mk_example0000000000000001', timestamp: 1763700000, nonce: 'n0nce12345', signature: 'ab'.repeat(32) };

export const createOrder: Body<'/api/merchant/createOrder'> = { ...auth, order_type: 1, cny_amount: '100.00', paychannel_id: 3, paychannel_paymethod: 'alipay', merchant_order_no: 'M-1', subject: '100 credits', return_url: 'https://shop.example/orders/M-1' };
export const orderQueryList: Body<'/api/merchant/orderQueryList'> = { ...auth, page: 2, limit: 50, status: 'paid', start_time: 1763700000 };

// @ts-expect-error cny_amount is required
export const withoutAmount: Body<'/api/merchant/createOrder'> = { ...auth, order_type: 1, paychannel_id: 3, paychannel_paymethod: 'alipay' };
// @ts-expect-error the signature is required
export const unsigned: Body<'/api/merchant/orderQueryList'> = { api_key: auth.api_key, timestamp: auth.timestamp, nonce: auth.nonce };
// @ts-expect-error not an order status
export const badStatus: Body<'/api/merchant/orderQueryList'> = { ...auth, status: 'shipped' };

type Data<P extends keyof paths> = paths[P] extends { post: { responses: { 200: { content: { 'application/json': { data: infer D } } } } } } ? D : never;
export const payUrl = (answer: Data<'/api/merchant/createOrder'>): string | null => answer.pay_url;
export const expiresAt = (answer: Data<'/api/merchant/createOrder'>): number | null => answer.expires_at;
export const amounts = (page: Data<'/api/merchant/orderQueryList'>): string[] => page.list.map((order) => order.cny_amount);
export const credited = (page: Data<'/api/merchant/orderQueryList'>): number => page.list.reduce((fen, order) => fen + order.merchant_actual_amount, page.total * 0);
// @ts-expect-error merchant_actual_amount is integer fen, not yuan text
export const fenIsNotText: Data<'/api/merchant/orderQueryList'>['list'][number]['merchant_actual_amount'] = '99.40';

export const conflict: ErrorCode<'/api/merchant/createOrder', 409> = 40900;
// @ts-expect-error createOrder's 409 is 40900 (idempotency), not 40902
export const notACreateOrderConflict: ErrorCode<'/api/merchant/createOrder', 409> = 40902;
export const unauthorised: ErrorCode<'/api/merchant/orderQueryList', 401>[] = [40100, 40101, 40102, 40103, 40104];
`;

describe('The OpenAPI document (/docs-json) with the tools merchants use', () => {
  let api: TestApi;
  let dir: string;
  let documentPath: string;
  beforeAll(async () => {
    api = await startTestApi();
    dir = mkdtempSync(join(tmpdir(), 'openapi-'));
    documentPath = join(dir, 'openapi.json');
    const res = await api.app.inject({ method: 'GET', url: '/docs-json' });
    expect(res.statusCode).toBe(200);
    writeFileSync(documentPath, res.body);
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await api?.close();
  });

  it("is the API only, for the merchant's tools: servers, the three security schemes, every error answer; no portal or sandbox page", () => {
    const doc = JSON.parse(readFileSync(documentPath, 'utf8')) as {
      servers: { url: string }[];
      paths: Record<
        string,
        Record<
          string,
          {
            security?: unknown[];
            responses: Record<string, { content?: Record<string, { schema: { allOf: [unknown, { properties: { code: { enum: number[] } } }] } }> }>;
          }
        >
      >;
      components: { securitySchemes: Record<string, { type: string; description?: string }> };
    };
    expect(doc.servers.map((server) => server.url)).toEqual([api.config.publicBaseUrl]);
    expect(Object.keys(doc.paths).filter((path) => /^\/(portal|sandbox|pay)\b/.test(path))).toEqual([]);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['merchant_signature', 'metrics_token', 'portal_session']);
    expect(doc.components.securitySchemes.merchant_signature.description).toMatch(/HMAC-SHA256[\s\S]*canonical string[\s\S]*api_key=mk_example/);
    const codes = (path: string, status: number, method = 'post') =>
      doc.paths[path][method].responses[status].content!['application/json'].schema.allOf[1].properties.code.enum;
    const createOrder = doc.paths['/api/merchant/createOrder'].post;
    expect(createOrder.security).toEqual([{ merchant_signature: [] }]);
    expect(Object.keys(createOrder.responses).sort()).toEqual(['200', '400', '401', '403', '409', '413', '415', '429', '500', '502', '503']);
    expect(codes('/api/merchant/createOrder', 401)).toEqual([40100, 40101, 40102, 40103, 40104]);
    expect(codes('/api/merchant/createOrder', 403)).toEqual([40300, 40301, 40302]);
    expect(codes('/api/merchant/orderQueryDetail', 404)).toEqual([40400]);
    expect(codes('/api/merchant/orderList', 401)).toEqual([40100]);
    expect(doc.paths['/api/merchant/orderList'].post.security).toEqual([{ portal_session: [] }]);
    expect(doc.paths['/metrics'].get.security).toEqual(expect.arrayContaining([{ metrics_token: [] }]));
    // METRICS_TOKEN is whatever string the operator chose, not a JWT.
    expect(doc.components.securitySchemes.metrics_token).toEqual({ type: 'http', scheme: 'bearer', description: expect.stringContaining('METRICS_TOKEN') });
    expect(codes('/addons/paychannel/channel/processor/cityList', 404, 'get')).toEqual([40401]);
  });

  it('describes every callback as an OpenAPI 3.1 webhook: its body, its signature headers and the answers it expects', () => {
    const doc = JSON.parse(readFileSync(documentPath, 'utf8')) as {
      openapi: string;
      webhooks: Record<
        string,
        {
          post: {
            parameters: { name: string; in: string; required: boolean }[];
            requestBody: { content: { 'application/json': { schema: { $ref: string } } } };
            responses: Record<string, unknown>;
          };
        }
      >;
      components: { schemas: Record<string, { allOf?: { properties?: Record<string, { enum?: string[] }>; $ref?: string }[] }> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.webhooks).sort()).toEqual(['order.cancelled', 'order.completed', 'order.paid', 'refund.failed', 'refund.succeeded', 'webhook.test']);
    for (const [event, { post }] of Object.entries(doc.webhooks)) {
      expect([event, post.parameters.filter((p) => p.in === 'header' && p.required).map((p) => p.name)]).toEqual([
        event,
        ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'X-Event-Id', 'X-Event-Type', 'X-Delivery-Attempt'],
      ]);
      expect([event, Object.keys(post.responses).sort()]).toEqual([event, ['200', '410', '429', '503']]);
      // The body's schema names this event, and ends with the signature fields.
      const schema = doc.components.schemas[post.requestBody.content['application/json'].schema.$ref.split('/').pop()!];
      expect([event, schema.allOf![0].properties!.event.enum!.includes(event)]).toEqual([event, true]);
      expect([event, schema.allOf![1].$ref]).toEqual([event, '#/components/schemas/CallbackSignature']);
    }
  });

  it("passes Redocly's recommended rules with no error (redocly.yaml; no network: telemetry and the update check off)", async () => {
    const result = await node('node_modules/@redocly/cli/bin/cli.js', ['lint', '--config', 'redocly.yaml', '--format', 'json', documentPath], {
      env: { REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    const report = JSON.parse(result.stdout || '{}') as {
      totals?: { errors: number; warnings: number };
      problems?: { ruleId: string; message: string; location: { pointer: string }[] }[];
    };
    const problems = (report.problems ?? []).map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
    const unexpected = problems.filter((problem) => !KEPT_WARNINGS.includes(problem.split(':')[0]));
    expect({ errors: report.totals?.errors, unexpected }).toEqual({ errors: 0, unexpected: [] });
  });

  it('generates TypeScript types (openapi-typescript) that a createOrder and an orderQueryList call type-check against', async () => {
    const generated = await node('node_modules/openapi-typescript/bin/cli.js', [documentPath, '--output', join(dir, 'schema.ts')]);
    expect(generated.status).toBe(0);
    writeFileSync(join(dir, 'client.ts'), CLIENT);
    const tsc = await node('node_modules/typescript/bin/tsc', ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', 'client.ts'], {
      cwd: dir,
    });
    expect({ status: tsc.status, errors: tsc.stdout + tsc.stderr }).toEqual({ status: 0, errors: '' });
  });
});
