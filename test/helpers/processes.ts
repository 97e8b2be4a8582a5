import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { signSandboxNotification } from '@app/channels';
import { waitFor } from './callbacks';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Date.now() when it exited. */
  at: number;
}

export interface Running {
  name: string;
  child: ChildProcess;
  /** Everything it wrote on stdout and stderr so far. */
  output: () => string;
  exited: Promise<Exit>;
}

/** A compiled app from dist/ as its own process (`npm run start:api` / `start:worker` without the build step). */
export function launch(name: string, main: string, env: Record<string, string>, args: string[] = []): Running {
  const child = spawn(process.execPath, [main, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<Exit>((done) => child.once('exit', (code, signal) => done({ code, signal, at: Date.now() })));
  return { name, child, output: () => output, exited };
}

/** SIGTERM, as compose and Kubernetes stop a container; SIGKILL if it is still there after `killAfterMs`. */
export async function stopProcess(running: Running, killAfterMs = 10_000): Promise<Exit> {
  if (running.child.exitCode === null && running.child.signalCode === null) {
    running.child.kill('SIGTERM');
    const timer = setTimeout(() => running.child.kill('SIGKILL'), killAfterMs);
    await running.exited;
    clearTimeout(timer);
  }
  return running.exited;
}

/** `node <main> --health`, as the worker's container healthcheck runs it: its exit code and what it printed. */
export function runHealthCheck(main: string, env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [main, '--health'], { env: { PATH: process.env.PATH ?? '', ...env } }, (err, stdout) => {
      done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout });
    });
  });
}

/**
 * Waits until a compiled API answers /ready on `base` and the worker says it is taking jobs; a
 * loaded machine starts them slowly, so generously. On a timeout every process's output is
 * written out before the error.
 */
export async function appsReady(base: string, worker: Running, processes: Running[], timeoutMs = 120_000): Promise<void> {
  try {
    await waitFor(
      () =>
        fetch(`${base}/ready`).then(
          (r) => r.status === 200,
          () => false,
        ),
      timeoutMs,
      'the API ready',
    );
    await waitFor(() => worker.output().includes('taking jobs'), timeoutMs, 'the worker taking jobs');
  } catch (err) {
    for (const p of processes) process.stderr.write(`--- ${p.name} ---\n${p.output()}\n`);
    throw err;
  }
}

/**
 * The sandbox provider's "paid" notification for `orderNo`, POSTed to a running API's channel route
 * as the provider sends it (form-encoded, signed with the channel's key): the API's answer text.
 */
export function notifySandboxPaid(
  base: string,
  channelId: number,
  secretKey: string,
  orderNo: string,
  amountFen: number,
  init: { signal?: AbortSignal } = {},
): Promise<string> {
  const form = Object.entries(signSandboxNotification(secretKey, orderNo, amountFen, 'paid')).map(([k, v]): [string, string] => [k, String(v)]);
  return fetch(`${base}/api/channel/notify/${channelId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
    ...init,
  }).then((r) => r.text());
}
