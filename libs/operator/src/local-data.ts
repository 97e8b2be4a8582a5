import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// Where `npm start` (apps/embedded) keeps its database and secrets: it writes them, the operator CLI beside it reads them.

/** Secrets the embedded mode makes once and keeps beside its data, so a restart reads its own data. */
export interface LocalSecrets {
  master_key: string;
  pg_password: string;
}

export const DEFAULT_EMBEDDED_PG_PORT = 54329;

export function dataDirOf(env: Record<string, string | undefined>): string {
  return resolve(env.DATA_DIR ?? '.data');
}

export function embeddedPgPort(env: Record<string, string | undefined>): number {
  return Number(env.EMBEDDED_PG_PORT ?? DEFAULT_EMBEDDED_PG_PORT);
}

export function embeddedDatabaseUrl(port: number, password: string): string {
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/merchant_pay`;
}

export function readOrCreateSecrets(dataDir: string): LocalSecrets {
  const file = join(dataDir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as LocalSecrets;
  const secrets = { master_key: randomBytes(32).toString('base64'), pg_password: randomBytes(18).toString('base64url') };
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return secrets;
}

/**
 * For the operator CLI beside a running `npm start`: with no DATABASE_URL, the embedded
 * database and master key under ./.data are used, so the demo's merchant:balance just works.
 */
export function withEmbeddedDefaults(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const file = join(dataDirOf(env), 'secrets.json');
  if (env.DATABASE_URL || !existsSync(file)) return env;
  const secrets = JSON.parse(readFileSync(file, 'utf8')) as LocalSecrets;
  return { ...env, DATABASE_URL: embeddedDatabaseUrl(embeddedPgPort(env), secrets.pg_password), MASTER_KEY: env.MASTER_KEY ?? secrets.master_key };
}
/**
 * After a rotation in the portal the demo's credentials file holds the new secret, so the README's
 * commands that read it keep working; a rotation of another merchant leaves the file alone.
 */
export function keepDemoCredentials(file: string, rotated: { api_key: string; api_secret: string }): void {
  if (!existsSync(file)) return;
  const demo = JSON.parse(readFileSync(file, 'utf8')) as { api_key: string; api_secret: string };
  if (demo.api_key !== rotated.api_key) return;
  writeFileSync(file, JSON.stringify({ ...demo, api_secret: rotated.api_secret }, null, 2), { mode: 0o600 });
}
