import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

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
  return {
    ...env,
    DATABASE_URL: embeddedDatabaseUrl(embeddedPgPort(env), secrets.pg_password),
    MASTER_KEY: env.MASTER_KEY ?? secrets.master_key,
    QUEUE_BACKEND: env.QUEUE_BACKEND ?? 'postgres',
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One `npm start` per data folder: a second one would take over (stop and restart) the first
 * one's database. The claim is a pid file, given up on exit; a dead owner's claim is taken over.
 */
export function claimDataDir(dataDir: string): void {
  const file = join(dataDir, 'npm-start.pid');
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const owner = Number(readFileSync(file, 'utf8'));
    if (owner > 0 && owner !== process.pid && alive(owner)) {
      throw new Error(`another npm start (pid ${owner}) runs on ${dataDir}: stop it first, or give a second one its own DATA_DIR and EMBEDDED_PG_PORT`, {
        cause: err,
      });
    }
    writeFileSync(file, String(process.pid));
  }
  process.once('exit', () => {
    if (existsSync(file) && Number(readFileSync(file, 'utf8')) === process.pid) rmSync(file, { force: true });
  });
}
