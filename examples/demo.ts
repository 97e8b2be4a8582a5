/**
 * The demo walk-through: creates an order for the embedded demo merchant, prints its pay_url,
 * and listens for the callbacks, verifying both signatures of each.
 *   npm start                 (in one terminal)
 *   npm run demo              (in another; then open the printed pay_url and press Pay)
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { MerchantClient } from './merchant-client';

interface Demo {
  api_key: string;
  api_secret: string;
  channel_ids: number[];
}

async function main(): Promise<void> {
  const demo = JSON.parse(readFileSync(process.env.DEMO_FILE ?? '.data/demo-merchant.json', 'utf8')) as Demo;
  const base = process.env.API_BASE ?? 'http://127.0.0.1:3000/api';
  const port = Number(process.env.CALLBACK_PORT ?? 4000);
  const client = new MerchantClient(base, demo.api_key, demo.api_secret);

  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]));
      const okBody = client.verifyCallbackBody(body);
      const okHeaders = client.verifyCallbackHeaders(headers, raw);
      console.log(
        `callback ${String(body.event)} order ${String(body.order_no)} status ${String(body.status)} body-signature ${okBody ? 'valid' : 'INVALID'} webhook-signature ${okHeaders ? 'valid' : 'INVALID'}`,
      );
      res.end(okBody ? 'success' : 'bad signature');
      if (body.event === 'order.completed' || body.event === 'order.cancelled') server.close();
    });
  });
  await new Promise<void>((done) => server.listen(port, '127.0.0.1', done));

  const channels = await client.call<{ list: { id: number; name: string; pay_method: string }[] }>('getPayChannels');
  console.log('channels:', channels.data.list.map((c) => `${c.id} ${c.name} (${c.pay_method})`).join('; '));
  const order = await client.call<{ order_no: string; pay_url: string; status: string }>('createOrder', {
    order_type: 1,
    cny_amount: process.env.AMOUNT ?? '100.00',
    paychannel_id: demo.channel_ids[0],
    paychannel_paymethod: 'alipay',
    customer_name: 'Demo customer',
    notify_url: `http://127.0.0.1:${port}/callback`,
  });
  if (order.code !== 1) {
    console.error('createOrder failed:', order);
    server.close();
    process.exitCode = 1;
    return;
  }
  console.log(`order ${order.data.order_no} is ${order.data.status}; open this to pay:\n  ${order.data.pay_url}`);
  console.log(`waiting for callbacks on http://127.0.0.1:${port}/callback ...`);
}

void main();
