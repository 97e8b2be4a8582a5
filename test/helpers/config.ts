import { createHash, randomBytes } from 'node:crypto';
import { type AppConfig, loadConfig } from '@app/common';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A configuration for one spec file: its own database, a queue prefix of its own, quiet logs, the sandbox on. */
export function testConfig(databaseUrl: string, env: Record<string, string> = {}): AppConfig {
  return loadConfig({
    DATABASE_URL: databaseUrl,
    REDIS_URL: TEST_REDIS_URL,
    // One key per database, as in production: every app a spec starts on it opens its check value.
    MASTER_KEY: createHash('sha256').update(`master key of ${databaseUrl}`).digest('base64'),
    LOG_LEVEL: 'silent',
    QUEUE_PREFIX: `mp-test-${randomBytes(4).toString('hex')}`,
    SANDBOX_ENABLED: 'true',
    ...env,
  });
}
