import { Writable } from 'node:stream';
import pino from 'pino';
import { REDACTED_PATHS } from './logging';

describe('log redaction', () => {
  it('blanks every secret the service handles, wherever it is logged, and keeps the rest', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = pino({ redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, sink);
    logger.info({
      req: { id: 'r-1', headers: { authorization: 'Basic b3BzOnB3', cookie: 'sid=1' } },
      merchant: { id: 7, api_secret: 'sk_secret_1', apiSecretEnc: 'v1:enc', apiKey: 'mk_visible' },
      channel: { secret_key: 'chan-secret', config: { proxy_url: 'http://u:p@proxy' }, configEnc: 'v1:x' },
      admin: { password: 'pw' },
      app: { metricsToken: 'scrape-token' },
    });
    const out = lines.join('');
    for (const secret of ['b3BzOnB3', 'sid=1', 'sk_secret_1', 'v1:enc', 'chan-secret', 'u:p@proxy', 'v1:x', '"pw"', 'scrape-token']) {
      expect(out).not.toContain(secret);
    }
    expect(out).toContain('mk_visible');
    expect(out).toContain('r-1');
  });
});
