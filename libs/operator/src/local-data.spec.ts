import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keepDemoCredentials } from './local-data';

describe('keepDemoCredentials', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mp-demo-file-'));
  const file = join(dir, 'demo-merchant.json');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("writes the demo merchant's new secret, keeping the rest and the file private; another merchant's rotation changes nothing", () => {
    writeFileSync(file, JSON.stringify({ api_key: 'mk_test_demo', api_secret: 'sk_old', channel_ids: [1, 2, 3] }, null, 2), { mode: 0o600 });
    keepDemoCredentials(file, { api_key: 'mk_test_other', api_secret: 'sk_theirs' });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ api_key: 'mk_test_demo', api_secret: 'sk_old', channel_ids: [1, 2, 3] });
    keepDemoCredentials(file, { api_key: 'mk_test_demo', api_secret: 'sk_new' });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ api_key: 'mk_test_demo', api_secret: 'sk_new', channel_ids: [1, 2, 3] });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    keepDemoCredentials(join(dir, 'missing.json'), { api_key: 'mk_test_demo', api_secret: 'sk_x' });
  });
});
