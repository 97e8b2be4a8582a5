import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import type { Credentials } from '@app/operator';
import { MerchantClient } from '../examples/merchant-client';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { CallbackReceiver, type ReceivedCallback, waitFor } from './helpers/callbacks';
import { freePort } from './helpers/free-port';
import { sql } from './helpers/orders';
import { inviteAndAccept } from './helpers/portal';

const README = readFileSync(join(__dirname, '../README.md'), 'utf8');

/** The first ```lang block of the README section under `heading`. */
function snippet(heading: string, lang: 'ts' | 'php'): string {
  const start = README.indexOf(`\n${heading}\n`);
  expect(start).toBeGreaterThan(0);
  const section = README.slice(start + heading.length + 2).split(/\n#{2,3} /)[0];
  return new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(section)![1];
}

interface Attempt {
  http_status: number | null;
  success: boolean;
  response_excerpt: string | null;
}

/**
 * The README's callback receivers (TypeScript and PHP), run as printed against real signed
 * callbacks (callbackTest), and what its rotation section says: a receiver that knows only the
 * previous secret keeps accepting until the grace ends; given both secrets it accepts throughout.
 */
describe("the README's callback receivers and rotation advice (real PostgreSQL and Redis)", () => {
  let api: TestApi;
  let merchant: Credentials;
  const dir = mkdtempSync(join(tmpdir(), 'readme-receivers-'));
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    api = await startTestApi({ CALLBACK_ALLOW_PRIVATE: 'true', CALLBACK_EGRESS_ADDRESSES: ' 203.0.113.10, 2001:db8::10 ' });
    ({ merchant } = await merchantWithChannels(api.operator));
    const typescript = snippet('### Receiving callbacks', 'ts').replace('.listen(4000)', '.listen(Number(process.env.PORT))');
    writeFileSync(join(dir, 'receiver.js'), ts.transpileModule(typescript, { compilerOptions: { module: ts.ModuleKind.CommonJS } }).outputText);
    // The merchant's database: a stand-in with the one statement the snippet runs, keeping event ids in a file.
    const database = `$pdo = new class {
    function prepare($sql) { return new class {
        private $inserted = 0;
        function execute($args) { $file = getenv('SEEN_FILE'); $seen = is_file($file) ? file($file, FILE_IGNORE_NEW_LINES) : []; $this->inserted = in_array($args[0], $seen, true) ? 0 : 1; if ($this->inserted) file_put_contents($file, $args[0] . "\\n", FILE_APPEND); }
        function rowCount() { return $this->inserted; }
    }; }
};
`;
    writeFileSync(join(dir, 'receiver.php'), snippet('### Receiving callbacks', 'php').replace('<?php\n', `<?php\n${database}`));
  });

  afterAll(async () => {
    for (const child of children) child.kill();
    await api?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a receiver with these secrets; answers its URL once it answers HTTP. */
  async function receiver(kind: 'ts' | 'php', secrets: { API_SECRET: string; API_SECRET_PREVIOUS?: string }): Promise<string> {
    const port = await freePort();
    const env = { PATH: process.env.PATH ?? '', PORT: String(port), SEEN_FILE: join(dir, `seen-${port}`), ...secrets };
    const child =
      kind === 'ts'
        ? spawn(process.execPath, [join(dir, 'receiver.js')], { env, stdio: 'ignore' })
        : spawn('php', ['-S', `127.0.0.1:${port}`, join(dir, 'receiver.php')], { env, stdio: 'ignore' });
    children.push(child);
    const url = `http://127.0.0.1:${port}/notify`;
    await waitFor(
      () =>
        fetch(url, { method: 'GET' }).then(
          () => true,
          () => false,
        ),
      10_000,
      `the ${kind} receiver listening`,
    );
    return url;
  }

  const callbackTest = async (url: string, by: Credentials = merchant): Promise<Attempt> => {
    const res = await post<Attempt>(api.app, '/api/merchant/callbackTest', signed(by, { url }));
    expect(res.body.code).toBe(1);
    return res.body.data;
  };

  it('both receivers verify, dedupe and answer success; after a rotation one holding only the old secret keeps accepting until the grace ends, as the rotation section says', async () => {
    const oldSecret = merchant.api_secret;
    const oldOnly = { ts: await receiver('ts', { API_SECRET: oldSecret }), php: await receiver('php', { API_SECRET: oldSecret }) };
    for (const url of Object.values(oldOnly)) expect(await callbackTest(url)).toMatchObject({ http_status: 200, success: true, response_excerpt: 'success' });

    const rotated = await api.operator.merchants.rotateSecret(merchant.id, '24h');
    await waitFor(async () => (await post(api.app, '/api/merchant/getPayChannels', signed(rotated))).body.code === 1, 2000, 'the new secret in use');

    // During the grace the body is signed with the previous secret and the header carries both (SPEC 3, issue 38).
    const capture = await CallbackReceiver.start();
    let callback: ReceivedCallback;
    try {
      await callbackTest(capture.url);
      callback = capture.received[0];
      const withOld = new MerchantClient('', merchant.api_key, oldSecret);
      expect([withOld.verifyCallbackHeaders(callback.headers as Record<string, string>, callback.raw), withOld.verifyCallbackBody(callback.body)]).toEqual([
        true,
        true,
      ]);
      // Given only the new secret before the grace ends, a receiver checking the body refuses: hence "keep both".
      const withNew = new MerchantClient('', merchant.api_key, rotated.api_secret);
      expect([withNew.verifyCallbackHeaders(callback.headers as Record<string, string>, callback.raw), withNew.verifyCallbackBody(callback.body)]).toEqual([
        true,
        false,
      ]);
    } finally {
      await capture.close();
    }
    // The receivers not yet given the new secret accept, both checks passed, while it is being deployed.
    for (const url of Object.values(oldOnly)) expect(await callbackTest(url)).toMatchObject({ http_status: 200, success: true, response_excerpt: 'success' });

    // Given both, as the README says to keep them for the grace: accepted too.
    const both = { API_SECRET: rotated.api_secret, API_SECRET_PREVIOUS: oldSecret };
    const withBoth: Record<'ts' | 'php', string> = { ts: '', php: '' };
    for (const kind of ['ts', 'php'] as const) {
      const url = (withBoth[kind] = await receiver(kind, both));
      expect(await callbackTest(url)).toMatchObject({ http_status: 200, success: true, response_excerpt: 'success' });
      // The same callback twice (a retry after a lost answer): success both times, handled once.
      const headers = Object.fromEntries(['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [h, String(callback.headers[h])]));
      for (let i = 0; i < 2; i++) {
        const again = await fetch(url, { method: 'POST', headers, body: callback.raw });
        expect([kind, again.status, await again.text()]).toEqual([kind, 200, 'success']);
      }
      if (kind === 'php')
        expect(
          readFileSync(join(dir, `seen-${new URL(url).port}`), 'utf8')
            .split('\n')
            .filter((id) => id === callback.body.event_id),
        ).toHaveLength(1);
    }

    // The grace ends (as if 24 h passed): callbacks are signed with the new secret only; a receiver still holding only the old one refuses them.
    await sql(api.app).query(`UPDATE merchants SET api_secret_previous_until = now() WHERE id = $1`, [merchant.id]);
    await waitFor(async () => (await post(api.app, '/api/merchant/getPayChannels', signed(merchant))).body.code === 40102, 2000, 'the old secret refused');
    // One callback, handed to every receiver as it arrived (callbackTest allows 10 a minute).
    const late = await CallbackReceiver.start();
    try {
      await callbackTest(late.url, rotated);
      const after = late.received[0];
      expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
      const headers = Object.fromEntries(['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [h, String(after.headers[h])]));
      const answers = async (urls: Record<string, string>) =>
        Promise.all(
          Object.entries(urls).map(async ([kind, url]) => {
            const res = await fetch(url, { method: 'POST', headers, body: after.raw });
            return [kind, res.status, await res.text()];
          }),
        );
      expect(await answers(oldOnly)).toEqual([
        ['ts', 401, 'bad signature'],
        ['php', 401, 'bad signature'],
      ]);
      expect(await answers(withBoth)).toEqual([
        ['ts', 200, 'success'],
        ['php', 200, 'success'],
      ]);
    } finally {
      await late.close();
    }
  }, 60_000);

  it('the developers page shows where callbacks come from (CALLBACK_EGRESS_ADDRESSES)', async () => {
    const client = await inviteAndAccept(api.app, api.operator, merchant.id, 'dev@shop.example');
    const page = await client.get('/portal/developers');
    expect(page.html).toMatch(/id="egress-addresses"><code class="break">203\.0\.113\.10, 2001:db8::10<\/code>/);
  });
});
