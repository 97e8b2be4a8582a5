import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Whether a process with this pid runs (EPERM: it does, as another user). */
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
