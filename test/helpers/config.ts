import { createHash } from 'node:crypto';
import { type AppConfig, loadConfig } from '@app/common';
import { databaseEnv } from './database';
import { TEST_REDIS_URL, testQueuePrefix } from './redis-keys';

export { TEST_REDIS_URL };

/** A configuration for one spec file: its own database, a queue prefix of its own (of this run, so the teardown finds what a failed spec left), quiet logs, the sandbox on. */
export function testConfig(databaseUrl: string, env: Record<string, string> = {}): AppConfig {
  return loadConfig({
    ...databaseEnv(databaseUrl),
    REDIS_URL: TEST_REDIS_URL,
    // One key per database, as in production: every app a spec starts on it opens its check value.
    MASTER_KEY: createHash('sha256').update(`master key of ${databaseUrl}`).digest('base64'),
    LOG_LEVEL: 'silent',
    QUEUE_PREFIX: testQueuePrefix(),
    SANDBOX_ENABLED: 'true',
    ...env,
  });
}
