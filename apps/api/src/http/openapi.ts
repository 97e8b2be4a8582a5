import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { type AppConfig, ERROR_INFO } from '@app/common';
import { canonicalString, sign } from '@app/signature';
import { regionOpenApiPaths } from '../region/region-routes';
import { METRICS_SCHEME, SIGNATURE_SCHEME } from './api-docs';
import { CALLBACKS_TAG, CALLBACK_SCHEMAS, callbackWebhooks } from './callback-webhooks';

const EXAMPLE_SECRET = 'sk_example_secret_do_not_use';

/** The worked signing example of the document and of the portal's help page: one set of values, signed by the service's own code. */
export const SIGNING_EXAMPLE = {
  secret: EXAMPLE_SECRET,
  params: {
    api_key: 'mk_example0000000000000001',
    timestamp: 1763700000,
    nonce: 'n0nce12345',
    order_type: 1,
    cny_amount: '100.00',
    paychannel_id: 3,
    paychannel_paymethod: 'alipay',
    customer_name: '张三',
  },
} as const;

/** A worked example computed by the service's own signing code, so the document cannot drift from it. */
function signatureExample(prefix: string): string {
  const { params } = SIGNING_EXAMPLE;
  return [
    `With api_secret \`${EXAMPLE_SECRET}\`, the body`,
    '```json',
    JSON.stringify(params, null, 2),
    '```',
    `has the canonical string\n\n\`${canonicalString(params)}\`\n\nand the signature (lowercase hex HMAC-SHA256)\n\n\`${sign(params, EXAMPLE_SECRET)}\`\n`,
    `sent as \`POST ${prefix}/merchant/createOrder\` with \`"signature"\` added to the same JSON body.`,
  ].join('\n');
}

function description(config: AppConfig): string {
  const codes = (Object.entries(ERROR_INFO) as [string, { status: number; msg: string }][])
    .map(([code, info]) => `| ${code} | ${info.status} | ${info.msg} |`)
    .join('\n');
  return `Merchant orders, payment channels and mainland China region data.

## Envelope
Every region and merchant answer, failures included, is \`{"code": int, "msg": string, "time": string, "data": ...}\`.
\`code\` 1 is success; \`time\` is Unix seconds as a string. Validation failures carry \`data.errors: [{field, message}]\`.
\`msg\` is English, or Simplified Chinese when the request's \`Accept-Language\` prefers it (\`zh\`, \`zh-CN\`, \`zh-Hans\`);
\`code\` and \`data\` never change with the language. 40900 names the first order (\`data.order_no\`, or \`refund_no\`) and
the parameters that differ (\`data.differs\`); 40301 lists the channels you can use (\`data.linked\`).

## Error codes
| code | HTTP | meaning |
|---|---|---|
| 1 | 200 | success |
${codes}

## Signing a merchant request
Every merchant operation carries \`api_key\`, \`timestamp\` (Unix seconds, within ${config.authToleranceSeconds} s),
\`nonce\` (8-64 of \`[A-Za-z0-9_-]\`, once per api_key) and \`signature\`, in the JSON or form body (or the query
string; query and body are merged). The signature is the hex HMAC-SHA256, keyed with the api_secret, of the
canonical string: every parameter except \`signature\`, without null or empty-string values, sorted by key bytes,
as \`key=value\` joined by \`&\`, no URL-encoding; numbers as JavaScript writes them (send amounts as strings),
nested values as JSON with sorted keys. With a test-mode key (\`mk_test_\`) a 40102 answer's \`data.canonical\` is the
string the service signed, to compare with yours (never with a live key).

${signatureExample(config.apiPrefix)}

## Callbacks
Signed the same way with the merchant's secret, plus Standard Webhooks headers (\`webhook-id\`, \`webhook-timestamp\`,
\`webhook-signature\`; secret \`whsec_\` + base64(api_secret)). Answer \`success\` (or an empty 2xx); dedupe by \`event_id\`.
After a secret rotation the previous secret keeps verifying requests for a grace period (24 h unless the operator
chose otherwise, or none for a leaked secret); during it \`webhook-signature\` carries two space-separated \`v1,\`
entries (new first), and the body's \`signature\` is made with the previous secret until the grace ends, then with the
new one: a receiver that still holds only the old secret keeps verifying both while the new one is deployed.
Each attempt is signed afresh (new \`timestamp\`, \`nonce\`, \`webhook-timestamp\`; same \`event_id\`), and
\`webhook.test\` events arrive at the same endpoint. Every event's body, headers and expected answer are this
document's \`webhooks\`.

## Callback tools
\`callbackQueryList\` shows an order's deliveries and attempts, \`callbackResend\` sends its latest event again,
\`callbackRecover\` queues again what failed in a window (once a minute), \`callbackTest\` sends a signed
\`webhook.test\` event now and answers the attempt.`;
}

/** How to sign, for the signature's security scheme: tools show it beside every signed operation. */
function signatureScheme(config: AppConfig): string {
  return `The request signature of SPEC 3. OpenAPI cannot place a credential in a request body, so this scheme names \`signature\` in the query string, where it may also travel; usually \`api_key\`, \`timestamp\` (Unix seconds, within ${config.authToleranceSeconds} s), \`nonce\` (8-64 of \`[A-Za-z0-9_-]\`, once per api_key) and \`signature\` are fields of the JSON or form body beside the operation's own (query and body are merged).

\`signature\` = lowercase hex HMAC-SHA256, keyed with the api_secret (UTF-8), of the canonical string: every parameter except \`signature\`, without null or empty-string values, sorted by key bytes, as \`key=value\` joined by \`&\`, no URL-encoding; numbers as JavaScript writes them (send amounts as strings).

${signatureExample(config.apiPrefix)}`;
}

/** The OpenAPI document at /docs-json and its page at /docs. */
export function mountOpenApi(app: NestFastifyApplication, config: AppConfig): void {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      // 3.1: the callbacks the service sends are its `webhooks` (SPEC 7).
      .setOpenAPIVersion('3.1.0')
      .setTitle('merchant-pay')
      .setVersion('1')
      .setDescription(description(config))
      .addServer(config.publicBaseUrl, 'This service (PUBLIC_BASE_URL)')
      .addTag('merchant', "Signed merchant operations (SPEC 3, 5, 6, 7) and the portal session's orderList")
      .addTag('region', 'Mainland China province, city and district data (SPEC 4); no authentication, rate-limited per client IP')
      .addTag('channel', 'Called by payment channels, not merchants: their notifications')
      .addTag('operations', 'Probes and metrics for the people who run the service')
      .addTag(CALLBACKS_TAG, "Callbacks the service POSTs to the merchant's notify URL (the document's webhooks)")
      .addApiKey({ type: 'apiKey', in: 'query', name: 'signature', description: signatureScheme(config) }, SIGNATURE_SCHEME)
      .addCookieAuth('portal_session', { type: 'apiKey', in: 'cookie', description: 'Set by a sign-in at /portal/login (orderList)' }, 'portal_session')
      // Not addBearerAuth: it calls every bearer token a JWT, and METRICS_TOKEN is an opaque string the operator chose.
      .addSecurity(METRICS_SCHEME, { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, an opaque string the operator chose, when one is set' })
      .build(),
    // One tag per operation, from the declared four; Nest would add one per controller class too.
    { autoTagControllers: false },
  );
  document.paths = { ...document.paths, ...regionOpenApiPaths() };
  document.webhooks = callbackWebhooks();
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ...CALLBACK_SCHEMAS } };
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json', useGlobalPrefix: false });
}
