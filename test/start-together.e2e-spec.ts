import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { testConfig } from './helpers/config';
import { waitFor } from './helpers/callbacks';
import { createTestDatabase } from './helpers/database';
import { freePort } from './helpers/free-port';
import { runHealthCheck } from './helpers/processes';

const ROOT = resolve(__dirname, '..');
/** What a fresh clone has that the build reads; node_modules is linked, as `npm ci` would have made it. */
const CHECKOUT = ['apps', 'libs', 'migrations', 'scripts', 'bench', 'examples', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];

interface NpmRun {
  child: ChildProcess;
  output: () => string;
}

/** `npm run <script>` in `cwd`, in a process group of its own as in a terminal. */
function npmRun(cwd: string, script: string, env: Record<string, string>): NpmRun {
  const child = spawn('npm', ['run', script], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? cwd, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return { child, output: () => output };
}

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM to the whole group (npm, its shell, the app); SIGKILL whatever is left after 30 s. */
async function stopGroup(run: NpmRun): Promise<void> {
  const pid = run.child.pid!;
  if (!groupAlive(pid)) return;
  process.kill(-pid, 'SIGTERM');
  await waitFor(() => !groupAlive(pid), 30_000, 'the group ended').catch(() => process.kill(-pid, 'SIGKILL'));
}

function builds(dir: string): string[] {
  return readdirSync(join(dir, '.build')).filter((name) => name.startsWith('b-'));
}

describe("the README's start commands on a fresh checkout", () => {
  const dir = mkdtempSync(join(tmpdir(), 'mp-fresh-checkout-'));
  const runs: NpmRun[] = [];

  beforeAll(() => {
    for (const entry of CHECKOUT) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    // The files a server-rendered page ships beside its code.
    mkdirSync(join(dir, 'apps/api/src/portal/views'), { recursive: true });
    writeFileSync(join(dir, 'apps/api/src/portal/views/page.html'), '<p>page</p>');
    mkdirSync(join(dir, 'libs/common/src/static/css'), { recursive: true });
    writeFileSync(join(dir, 'libs/common/src/static/css/site.css'), 'p {}');
  });

  afterAll(async () => {
    await Promise.all(runs.map(stopGroup));
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('npm run start:api and npm run start:worker started at the same moment build once and both serve; a rebuild under them leaves them running', async () => {
    const config = testConfig(await createTestDatabase());
    const port = await freePort();
    const env = {
      DATABASE_URL: config.databaseUrl,
      REDIS_URL: config.redisUrl!,
      MASTER_KEY: config.masterKey.toString('base64'),
      QUEUE_PREFIX: config.queuePrefix,
      LOG_LEVEL: 'warn',
      PORT: String(port),
      WORKER_HEALTH_FILE: join(dir, 'worker.health'),
    };
    runs.push(npmRun(dir, 'start:api', env), npmRun(dir, 'start:worker', env));
    const [api, worker] = runs;
    const workerMain = join(dir, 'dist/apps/worker/src/main.js');
    const ready = () =>
      fetch(`http://127.0.0.1:${port}/ready`).then(
        (r) => r.status === 200,
        () => false,
      );

    const failed = () => runs.find((r) => r.child.exitCode !== null);
    await waitFor(async () => failed() !== undefined || (await ready()), 180_000, 'the API ready');
    expect(failed()?.output()).toBeUndefined();
    await waitFor(async () => (await runHealthCheck(workerMain, env)).code === 0, 30_000, 'the worker healthy');

    // One of the two built; the other waited for it and found the build fresh.
    const output = api.output() + worker.output();
    expect(output.match(/build: compiled into/g)).toHaveLength(1);
    expect(output).not.toMatch(/Cannot find module/);
    const [first] = builds(dir);
    expect(builds(dir)).toEqual([first]);
    expect(basename(readlinkSync(join(dir, 'dist')))).toBe(first);
    for (const asset of ['apps/api/src/portal/views/page.html', 'libs/common/src/static/css/site.css']) {
      expect(existsSync(join(dir, 'dist', asset)) ? asset : `${asset} missing from the build`).toBe(asset);
    }

    // An old build nobody runs from goes; one a live process registered in stays, like the first.
    const plant = (name: string, pid: number): void => {
      mkdirSync(join(dir, '.build', name, '.running'), { recursive: true });
      writeFileSync(join(dir, '.build', name, '.build-stamp'), '{}');
      writeFileSync(join(dir, '.build', name, '.running', String(pid)), '');
    };
    plant('b-0-1', 2 ** 22 + 1);
    plant('b-0-2', process.pid);
    const rebuilt = spawnSync(process.execPath, ['scripts/build.js'], { cwd: dir, encoding: 'utf8' });
    expect(rebuilt.status).toBe(0);
    const current = basename(readlinkSync(join(dir, 'dist')));
    expect(current).not.toBe(first);
    expect(builds(dir).sort()).toEqual(['b-0-2', current, first].sort());

    // Both still serve from the build they started with: the API answers, the worker beats again.
    const rebuiltAt = Date.now();
    expect(await ready()).toBe(true);
    const beat = () => (JSON.parse(readFileSync(env.WORKER_HEALTH_FILE, 'utf8')) as { at: number }).at;
    await waitFor(() => beat() > rebuiltAt, 15_000, 'a heartbeat after the rebuild');
    expect(runs.every((r) => r.child.exitCode === null)).toBe(true);
  }, 300_000);
});
