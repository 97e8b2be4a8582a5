import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { runCli } from '../apps/cli/src/main';
import { CallbackFixtures } from './helpers/callbacks';
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

    const c = await cli(
      'channel:create',
      '--category',
      'remotepay',
      '--name',
      'Sandbox',
      '--pay-method',
      'alipay,wxpay',
      '--adapter',
      'sandbox',
      '--rate',
      '0.006',
      '--min',
      '1',
      '--max',
      '500.50',
    );
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
    expect(Date.parse(String(rotated.json!.previous_secret_valid_until))).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    const revoked = await cli('merchant:rotate-secret', '--merchant', String(m.json!.id), '--grace', '0');
    expect(revoked.json).toMatchObject({ api_key: m.json!.api_key, previous_secret_valid_until: null });
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
    [['merchant:rotate-secret', '--merchant', '1', '--grace', 'soon']],
    [['merchant:disable', '--merchant', '999999']],
    [['channel:create', '--category', 'bogus', '--name', 'x', '--pay-method', 'alipay', '--adapter', 'sandbox']],
    [['channel:create', '--category', 'processor', '--name', 'x', '--pay-method', 'alipay,paypal', '--adapter', 'sandbox']],
    [['channel:create', '--category', 'processor', '--name', 'x', '--pay-method', 'alipay', '--adapter', 'stripe']],
    [['channel:create', '--category', 'processor', '--name', 'x', '--pay-method', 'alipay', '--adapter', 'epay', '--config', '{"password":"x"}']],
    [['channel:create', '--category', 'processor', '--name', 'x', '--pay-method', 'alipay', '--adapter', 'epay', '--min', '10', '--max', '5']],
    [['channel:link', '--merchant', '1', '--channel', '999999']],
    [['merchant:ledger', '--merchant', '999999']],
    [['merchant:ledger', '--merchant', '1', '--limit', '0']],
    [['merchant:ledger', '--merchant', '1', '--limit', '1001']],
    [['merchant:ledger', '--merchant', '1', '--limit', 'all']],
  ])('exits non-zero with a message and nothing on stdout for %p', async (argv) => {
    const res = await cli(...argv);
    expect(res.code).not.toBe(0);
    expect(res.out).toBe('');
    expect(res.err).toMatch(/^error: /);
  });

  it('words a refused input with the flag the command takes (the operator service names its parameter, never a flag)', async () => {
    const m = await cli('merchant:create', '--name', 'Words shop');
    const id = String(m.json!.id);
    const channel = ['channel:create', '--category', 'processor', '--name', 'x', '--pay-method', 'alipay', '--adapter', 'sandbox'];
    for (const [argv, message] of [
      [
        ['merchant:create', '--name', 'x', '--notify-url', 'ftp://x'],
        'error: --notify-url must be an absolute http or https URL without userinfo or backslash, of at most 512 characters\n',
      ],
      [
        ['merchant:set-notify-url', '--merchant', id, '--url', 'not a url'],
        'error: --url must be an absolute http or https URL without userinfo or backslash, of at most 512 characters\n',
      ],
      [['merchant:create', '--name', 'x', '--deposit-rate', '2'], 'error: --deposit-rate must be a rate from 0 to 1 with at most 8 decimals\n'],
      [['merchant:set-deposit-rate', '--merchant', id, '--rate', '2'], 'error: --rate must be a rate from 0 to 1 with at most 8 decimals\n'],
      [['merchant:rotate-secret', '--merchant', id, '--grace', 'soon'], 'error: --grace must be 0 or a duration such as 30m, 24h or 7d, at most 30d\n'],
      [[...channel, '--min', '10', '--max', '5'], 'error: --max must be a yuan amount not below --min\n'],
      [
        ['channel:create', '--category', 'processor', '--name', 'x', '--pay-method', 'alipay,paypal', '--adapter', 'sandbox'],
        'error: --pay-method must be a comma list of distinct wxpay, alipay, bank\n',
      ],
    ] as [string[], string][]) {
      const res = await cli(...argv);
      expect([argv, res.code, res.err]).toEqual([argv, 2, message]);
    }
  });

  it('a merchant is live unless made --mode test; channel:link refuses a channel of the other mode', async () => {
    const live = await cli('merchant:create', '--name', 'Live shop');
    expect(live.json).toMatchObject({ mode: 'live' });
    expect(live.json!.api_key).toMatch(/^mk_live_[0-9A-Za-z]{24}$/);
    const test = await cli('merchant:create', '--name', 'Test shop', '--mode', 'test');
    const sandbox = await cli('channel:create', '--category', 'processor', '--name', 'Sandbox', '--pay-method', 'alipay', '--adapter', 'sandbox');
    const epay = await cli(
      'channel:create',
      '--category',
      'processor',
      '--name',
      'Epay',
      '--pay-method',
      'alipay',
      '--adapter',
      'epay',
      '--config',
      JSON.stringify({ merchant_no: '1001', secret_key: 'k', gateway_url: 'https://pay.example/' }),
    );

    const sandboxOnLive = await cli('channel:link', '--merchant', String(live.json!.id), '--channel', String(sandbox.json!.id));
    expect([sandboxOnLive.code, sandboxOnLive.out]).toEqual([2, '']);
    expect(sandboxOnLive.err).toMatch(
      new RegExp(`^error: channel ${sandbox.json!.id} \\(sandbox\\) moves test money and merchant ${live.json!.id} is a live merchant`),
    );
    const epayOnTest = await cli('channel:link', '--merchant', String(test.json!.id), '--channel', String(epay.json!.id));
    expect([epayOnTest.code, epayOnTest.out]).toEqual([2, '']);
    expect(epayOnTest.err).toMatch(/moves live money and merchant \d+ is a test merchant/);

    expect((await cli('channel:link', '--merchant', String(live.json!.id), '--channel', String(epay.json!.id))).code).toBe(0);
    expect((await cli('channel:link', '--merchant', String(test.json!.id), '--channel', String(sandbox.json!.id))).code).toBe(0);
  });

  it('merchant:ledger lists the latest entries, newest first, and the sum of all of them per balance', async () => {
    const m = await cli('merchant:create', '--name', 'Ledger shop', '--mode', 'test');
    const empty = await cli('merchant:ledger', '--merchant', String(m.json!.id));
    expect(empty.json).toEqual({ merchant_id: m.json!.id, entries: [], totals: { available_fen: 0, deposit_fen: 0 } });
    const db = new Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    try {
      const { rows } = await db.query<{ id: string }>(
        `INSERT INTO channels (category, name, pay_method, adapter, config_enc) VALUES ('processor', 'c', 'alipay', 'sandbox', 'x') RETURNING id`,
      );
      const orders: string[] = [];
      for (let i = 0; i < 3; i++) {
        const { rows: o } = await db.query<{ id: string }>(
          `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen, merchant_actual_fen, request_hash, expires_at, created_at, updated_at)
           VALUES ($1, $2, $3, 1, 'completed', 1000, 0.006, 6, 0.1, 99, 895, 'h', now(), now(), now()) RETURNING id`,
          [`2025112112000000000${i}00`, m.json!.id, rows[0].id],
        );
        orders.push(o[0].id);
        await db.query(
          `INSERT INTO ledger_entries (merchant_id, order_id, kind, amount_fen, created_at) VALUES ($1, $2, 'order_credit', 895, now() + make_interval(secs => $3)), ($1, $2, 'order_deposit', 99, now() + make_interval(secs => $3))`,
          [m.json!.id, o[0].id, i],
        );
      }
    } finally {
      await db.end();
    }
    const latest = await cli('merchant:ledger', '--merchant', String(m.json!.id), '--limit', '2');
    const listing = latest.json as {
      entries: { kind: string; account: string; amount_fen: number; order_no: string; refund_no: null; created_at: string }[];
      totals: unknown;
    };
    expect(listing.entries).toHaveLength(2);
    expect(listing.entries.every((e) => e.order_no === '2025112112000000000200')).toBe(true);
    expect(listing.entries.map((e) => [e.account, e.amount_fen]).sort()).toEqual([
      ['available', 895],
      ['deposit', 99],
    ]);
    expect(Object.keys(listing.entries[0]).sort()).toEqual(['account', 'amount_fen', 'created_at', 'id', 'kind', 'order_no', 'refund_no']);
    // The totals cover every entry, not only those listed.
    expect(listing.totals).toEqual({ available_fen: 3 * 895, deposit_fen: 3 * 99 });
  });

  it("callback:list prints an order's deliveries with attempts; callback:recover queues the failed ones of the window", async () => {
    const m = await cli('merchant:create', '--name', 'Callback shop', '--mode', 'test', '--notify-url', 'https://shop.test/notify');
    const c = await cli('channel:create', '--category', 'remotepay', '--name', 'Sandbox', '--pay-method', 'alipay', '--adapter', 'sandbox');
    await cli('channel:link', '--merchant', String(m.json!.id), '--channel', String(c.json!.id));
    const fixtures = await CallbackFixtures.connect(env.DATABASE_URL);
    let order: { orderId: string; orderNo: string };
    let failed: { eventId: string; deliveryId: string };
    let old: { eventId: string; deliveryId: string };
    try {
      order = await fixtures.insertOrder(Number(m.json!.id), Number(c.json!.id));
      failed = await fixtures.insertEvent(order.orderId);
      await fixtures.db.query(
        `INSERT INTO callback_attempts (delivery_id, number, attempted_at, url, http_status, duration_ms, response_excerpt, error) VALUES ($1, 1, now(), 'https://shop.test/notify', 500, 31, $2, 'HTTP 500')`,
        [failed.deliveryId, 'E'.repeat(1000)],
      );
      await fixtures.db.query(`UPDATE callback_deliveries SET status = 'failed', attempts_made = 1, updated_at = now() - interval '1 hour' WHERE id = $1`, [
        failed.deliveryId,
      ]);
      const older = await fixtures.insertOrder(Number(m.json!.id), Number(c.json!.id));
      old = await fixtures.insertEvent(older.orderId);
      await fixtures.db.query(`UPDATE callback_deliveries SET status = 'failed', updated_at = now() - interval '3 days' WHERE id = $1`, [old.deliveryId]);
    } finally {
      await fixtures.close();
    }

    const listed = await cli('callback:list', '--order', order.orderNo);
    expect(listed.json).toEqual({
      order_no: order.orderNo,
      merchant_id: m.json!.id,
      deliveries: [
        {
          delivery_id: failed.deliveryId,
          event_id: failed.eventId,
          event: 'order.paid',
          url: 'https://shop.test/notify',
          status: 'failed',
          attempts: [{ at: expect.any(Number), http_status: 500, duration_ms: 31, error: 'HTTP 500', response_excerpt: 'E'.repeat(256) }],
        },
      ],
    });

    const since = Math.floor(Date.now() / 1000) - 2 * 3600;
    const recovered = await cli('callback:recover', '--merchant', String(m.json!.id), '--since', String(since));
    expect(recovered.json).toEqual({ merchant_id: m.json!.id, queued: 1, delivery_ids: [expect.any(String)] });
    const after = await cli('callback:list', '--order', order.orderNo);
    const deliveries = (after.json as { deliveries: { delivery_id: string; status: string; attempts: unknown[] }[] }).deliveries;
    expect(deliveries.map((d) => [d.delivery_id, d.status, d.attempts.length])).toEqual([
      [(recovered.json!.delivery_ids as string[])[0], 'pending', 0],
      [failed.deliveryId, 'failed', 1],
    ]);
    // Nothing twice: the event has a pending delivery now. The operator has no once-a-minute limit.
    expect((await cli('callback:recover', '--merchant', String(m.json!.id), '--since', String(since))).json).toMatchObject({ queued: 0 });
    // --until bounds the window: the 3-day-old failure only.
    const older = await cli('callback:recover', '--merchant', String(m.json!.id), '--since', String(since - 4 * 86_400), '--until', String(since - 86_400));
    expect(older.json).toMatchObject({ queued: 1 });

    for (const [argv, message] of [
      [['callback:list', '--order', '2099010100000000000000'], /no order/],
      [['callback:list'], /--order or --merchant is required/],
      [['callback:recover', '--merchant', String(m.json!.id), '--since', String(since - 8 * 86_400)], /--since must be within the last 7 days/],
      [['callback:recover', '--merchant', String(m.json!.id), '--since', String(since), '--until', String(since - 1)], /--until must not be before --since/],
      [['callback:recover', '--merchant', String(m.json!.id), '--since', 'yesterday'], /--since must be Unix seconds/],
      [['callback:recover', '--merchant', '999999', '--since', String(since)], /no merchant 999999/],
    ] as [string[], RegExp][]) {
      const res = await cli(...argv);
      expect([argv, res.code, res.out]).toEqual([argv, 2, '']);
      expect(res.err).toMatch(message);
    }
  });

  it('refuses an http gateway_url unless CHANNEL_ALLOW_HTTP=true: the epay key would travel in clear', async () => {
    const args = ['channel:create', '--category', 'remotepay', '--name', 'epay', '--pay-method', 'alipay', '--adapter', 'epay'];
    const config = JSON.stringify({ merchant_no: '1001', secret_key: 'k', gateway_url: 'http://pay.example/' });
    const refused = await cli(...args, '--config', config);
    expect([refused.code, refused.out]).toEqual([2, '']);
    expect(refused.err).toMatch(/^error: --config is refused: config\.gateway_url must be https .*CHANNEL_ALLOW_HTTP=true/);
    expect((await cli(...args, '--config', JSON.stringify({ merchant_no: '1001', secret_key: 'k', gateway_url: 'https://pay.example/' }))).code).toBe(0);

    let out = '';
    const allowed = await runCli([...args, '--config', config], {
      env: { ...env, CHANNEL_ALLOW_HTTP: 'true' },
      stdout: (t) => (out += t),
      stderr: () => undefined,
    });
    expect(allowed).toBe(0);
    expect(Object.keys(JSON.parse(out))).toEqual(['id']);
  });

  it('keeps an audit trail: who ran which command with which options (secrets left out), when and how it ended, in a table and a log line', async () => {
    const db = new Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    try {
      const [{ last }] = (await db.query<{ last: string }>(`SELECT coalesce(max(id), 0)::text AS last FROM operator_actions`)).rows;
      const audited = async (...argv: string[]) => {
        let err = '';
        const code = await runCli(argv, { env: { ...env, LOG_LEVEL: 'info', OPERATOR: 'alice' }, stdout: () => undefined, stderr: (t) => (err += t) });
        const lines = err.split('\n').filter((l) => l.startsWith('{'));
        return { code, lines: lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
      };
      const created = await audited('merchant:create', '--name', 'Audited shop', '--mode', 'test');
      expect(created.code).toBe(0);
      const channel = await audited(
        'channel:create',
        '--category',
        'remotepay',
        '--name',
        'Audited',
        '--pay-method',
        'alipay',
        '--adapter',
        'sandbox',
        '--config',
        '{"secret_key":"a-secret-that-must-not-be-kept"}',
      );
      expect(channel.code).toBe(0);
      const refused = await audited('merchant:disable', '--merchant', '999999');
      expect(refused.code).toBe(2);

      const { rows } = await db.query<{ actor: string; command: string; options: Record<string, string>; outcome: string; error: string | null; at: Date }>(
        `SELECT actor, command, options, outcome, error, at FROM operator_actions WHERE id > $1 ORDER BY id`,
        [last],
      );
      expect(rows.map((r) => [r.command, r.outcome])).toEqual([
        ['merchant:create', 'ok'],
        ['channel:create', 'ok'],
        ['merchant:disable', 'refused'],
      ]);
      expect(rows[0]).toMatchObject({ actor: expect.stringMatching(/^alice@/), options: { name: 'Audited shop', mode: 'test' }, error: null });
      expect(rows[1].options.config).toBe('[redacted]');
      expect(rows[2].error).toMatch(/no merchant 999999/);
      expect(JSON.stringify(rows)).not.toContain('a-secret-that-must-not-be-kept');
      // The same in one JSON line per command, on stderr (stdout keeps the answer).
      expect(created.lines).toEqual([
        expect.objectContaining({ context: 'OperatorAudit', actor: rows[0].actor, command: 'merchant:create', outcome: 'ok', stored: true }),
      ]);
      expect(channel.lines[0]).toMatchObject({ options: expect.objectContaining({ config: '[redacted]' }) });
      expect(JSON.stringify(channel.lines)).not.toContain('a-secret-that-must-not-be-kept');
      expect(refused.lines).toEqual([expect.objectContaining({ command: 'merchant:disable', outcome: 'refused', level: 40 })]);
    } finally {
      await db.end();
    }
  });

  it('names the variable when the configuration is bad', async () => {
    let err = '';
    const code = await runCli(['merchant:create', '--name', 'x'], { env: { ...env, MASTER_KEY: 'short' }, stdout: () => undefined, stderr: (t) => (err += t) });
    expect(code).not.toBe(0);
    expect(err).toContain('MASTER_KEY');
  });
});
