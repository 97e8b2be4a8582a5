import { randomBytes } from 'node:crypto';
import { runCli } from '../apps/cli/src/main';
import { createTestDatabase } from './helpers/database';

describe('operator CLI', () => {
  let env: Record<string, string>;

  beforeAll(async () => {
    env = { DATABASE_URL: await createTestDatabase(), MASTER_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent' };
  });

  async function cli(...argv: string[]): Promise<{ code: number; json: Record<string, unknown> | null; out: string; err: string }> {
    let out = '';
    let err = '';
    const code = await runCli(argv, { env, stdout: (t) => (out += t), stderr: (t) => (err += t) });
    const lines = out.split('\n').filter(Boolean);
    if (code === 0) expect(lines).toHaveLength(1);
    return { code, json: code === 0 ? JSON.parse(lines[0]) : null, out, err };
  }

  it('creates a merchant, a channel and a link, printing one JSON object each', async () => {
    const m = await cli('merchant:create', '--name', 'Shop', '--mode', 'test', '--notify-url', 'https://shop.test/notify', '--deposit-rate', '0.05');
    expect(m.code).toBe(0);
    expect(Object.keys(m.json!).sort()).toEqual(['api_key', 'api_secret', 'id', 'mode']);
    expect(m.json!.api_key).toMatch(/^mk_test_[0-9A-Za-z]{24}$/);
    expect(m.json!.mode).toBe('test');
    expect(String(m.json!.api_secret).length).toBeGreaterThanOrEqual(43);

    const c = await cli('channel:create', '--category', 'remotepay', '--name', 'Sandbox', '--pay-method', 'alipay,wxpay', '--adapter', 'sandbox', '--rate', '0.006', '--min', '1', '--max', '500.50');
    expect(c.code).toBe(0);
    expect(Object.keys(c.json!)).toEqual(['id']);

    const link = await cli('channel:link', '--merchant', String(m.json!.id), '--channel', String(c.json!.id));
    expect(link.json).toEqual({ merchant_id: m.json!.id, channel_id: c.json!.id, service_rate: '0.00600000' });
    const own = await cli('channel:link', '--merchant', String(m.json!.id), '--channel', String(c.json!.id), '--rate', '0.0045');
    expect(own.json!.service_rate).toBe('0.00450000');

    expect((await cli('merchant:balance', '--merchant', String(m.json!.id))).json).toEqual({ available_fen: 0, deposit_fen: 0 });
    const rotated = await cli('merchant:rotate-secret', '--merchant', String(m.json!.id));
    expect(rotated.json!.api_key).toBe(m.json!.api_key);
    expect(rotated.json!.api_secret).not.toBe(m.json!.api_secret);
    for (const cmd of ['merchant:disable', 'merchant:enable']) expect((await cli(cmd, '--merchant', String(m.json!.id))).code).toBe(0);
    expect((await cli('merchant:set-notify-url', '--merchant', String(m.json!.id), '--url', 'http://x.test/cb')).code).toBe(0);
    for (const cmd of ['channel:disable', 'channel:enable']) expect((await cli(cmd, '--channel', String(c.json!.id))).code).toBe(0);
  });

  it.each([
    [['nope']],
    [['merchant:create']],
    [['merchant:create', '--name', 'x', '--deposit-rate', '1.5']],
    [['merchant:create', '--name', 'x', '--notify-url', 'ftp://x']],
    [['merchant:create', '--name', 'x', '--bogus', '1']],
    [['merchant:create', '--name', 'x', '--mode', 'sandbox']],
    [['merchant:disable', '--merchant', 'abc']],
    [['merchant:disable', '--merchant', '999999']],
    [['channel:create', '--category', 'bogus', '--name', 'x', '--pay-method', 'alipay', '--adapter', 'sandbox']],
    [['channel:create', '--category', 'processor', '--name', 'x', '--pay-method', 'alipay,paypal', '--adapter', 'sandbox']],
    [['channel:create', '--category', 'processor', '--name', 'x', '--pay-method', 'alipay', '--adapter', 'stripe']],
    [['channel:create', '--category', 'processor', '--name', 'x', '--pay-method', 'alipay', '--adapter', 'epay', '--config', '{"password":"x"}']],
    [['channel:create', '--category', 'processor', '--name', 'x', '--pay-method', 'alipay', '--adapter', 'epay', '--min', '10', '--max', '5']],
    [['channel:link', '--merchant', '1', '--channel', '999999']],
  ])('exits non-zero with a message and nothing on stdout for %p', async (argv) => {
    const res = await cli(...argv);
    expect(res.code).not.toBe(0);
    expect(res.out).toBe('');
    expect(res.err).toMatch(/^error: /);
  });

  it('a merchant is live unless made --mode test; channel:link refuses a channel of the other mode', async () => {
    const live = await cli('merchant:create', '--name', 'Live shop');
    expect(live.json).toMatchObject({ mode: 'live' });
    expect(live.json!.api_key).toMatch(/^mk_live_[0-9A-Za-z]{24}$/);
    const test = await cli('merchant:create', '--name', 'Test shop', '--mode', 'test');
    const sandbox = await cli('channel:create', '--category', 'processor', '--name', 'Sandbox', '--pay-method', 'alipay', '--adapter', 'sandbox');
    const epay = await cli(
      'channel:create', '--category', 'processor', '--name', 'Epay', '--pay-method', 'alipay', '--adapter', 'epay',
      '--config', JSON.stringify({ merchant_no: '1001', secret_key: 'k', gateway_url: 'https://pay.example/' }),
    );

    const sandboxOnLive = await cli('channel:link', '--merchant', String(live.json!.id), '--channel', String(sandbox.json!.id));
    expect([sandboxOnLive.code, sandboxOnLive.out]).toEqual([2, '']);
    expect(sandboxOnLive.err).toMatch(new RegExp(`^error: channel ${sandbox.json!.id} \\(sandbox\\) moves test money and merchant ${live.json!.id} is a live merchant`));
    const epayOnTest = await cli('channel:link', '--merchant', String(test.json!.id), '--channel', String(epay.json!.id));
    expect([epayOnTest.code, epayOnTest.out]).toEqual([2, '']);
    expect(epayOnTest.err).toMatch(/moves live money and merchant \d+ is a test merchant/);

    expect((await cli('channel:link', '--merchant', String(live.json!.id), '--channel', String(epay.json!.id))).code).toBe(0);
    expect((await cli('channel:link', '--merchant', String(test.json!.id), '--channel', String(sandbox.json!.id))).code).toBe(0);
  });

  it('refuses an http gateway_url unless CHANNEL_ALLOW_HTTP=true: the epay key would travel in clear', async () => {
    const args = ['channel:create', '--category', 'remotepay', '--name', 'epay', '--pay-method', 'alipay', '--adapter', 'epay'];
    const config = JSON.stringify({ merchant_no: '1001', secret_key: 'k', gateway_url: 'http://pay.example/' });
    const refused = await cli(...args, '--config', config);
    expect([refused.code, refused.out]).toEqual([2, '']);
    expect(refused.err).toMatch(/^error: --config: config\.gateway_url must be https .*CHANNEL_ALLOW_HTTP=true/);
    expect((await cli(...args, '--config', JSON.stringify({ merchant_no: '1001', secret_key: 'k', gateway_url: 'https://pay.example/' }))).code).toBe(0);

    let out = '';
    const allowed = await runCli([...args, '--config', config], { env: { ...env, CHANNEL_ALLOW_HTTP: 'true' }, stdout: (t) => (out += t), stderr: () => undefined });
    expect(allowed).toBe(0);
    expect(Object.keys(JSON.parse(out))).toEqual(['id']);
  });

  it('names the variable when the configuration is bad', async () => {
    let err = '';
    const code = await runCli(['merchant:create', '--name', 'x'], { env: { ...env, MASTER_KEY: 'short' }, stdout: () => undefined, stderr: (t) => (err += t) });
    expect(code).not.toBe(0);
    expect(err).toContain('MASTER_KEY');
  });
});
