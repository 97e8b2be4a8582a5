import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';

const EMBEDDED = resolve(__dirname, '../../dist/apps/embedded/src/embedded-postgres.js');

/** The controller: starts the server (reusing the data when it exists), prints its URL, stops it on SIGTERM. */
const CONTROLLER = `
  const { startEmbeddedPostgres } = require(process.argv[1]);
  startEmbeddedPostgres(process.argv[2], Number(process.argv[3]), process.argv[4]).then(
    (db) => {
      // Alive until told to stop: its exit would stop the server (startEmbeddedPostgres's exit hook).
      const alive = setInterval(() => undefined, 1 << 30);
      process.once('SIGTERM', () => db.stop().then(() => process.exit(0), () => process.exit(1)).finally(() => clearInterval(alive)));
      process.stdout.write(db.url + '\\n');
    },
    (err) => { process.stderr.write(String(err && err.stack || err) + '\\n'); process.exit(1); },
  );
`;

/**
 * A PostgreSQL of the test's own, the embedded one `npm start` runs (scripts/chaos.ts does the
 * same): stopping it disturbs nobody else's tests. Its package is an ES module jest cannot load,
 * so a small Node process of the compiled build (npm test builds first) starts and stops it.
 */
export class OwnPostgres {
  private constructor(
    private readonly controller: ChildProcess,
    readonly url: string,
  ) {}

  /** Data under `dir` (traversable by the user postgres when the tests run as root). */
  static start(dir: string, port: number, password: string): Promise<OwnPostgres> {
    const controller = spawn(process.execPath, ['-e', CONTROLLER, EMBEDDED, dir, String(port), password], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    return new Promise((done, fail) => {
      controller.stdout!.on('data', (d: Buffer) => {
        output += d.toString();
        const url = /^(postgres:\S+)\n/m.exec(output)?.[1];
        if (url) done(new OwnPostgres(controller, url));
      });
      controller.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      controller.once('exit', (code) => fail(new Error(`the embedded PostgreSQL did not start (exit ${code}): ${output}`)));
    });
  }

  /** A fast shutdown (`pg_ctl stop -m fast`): connections are cut, as in an outage. */
  async stop(): Promise<void> {
    if (this.controller.exitCode !== null) return;
    const exited = new Promise((done) => this.controller.once('exit', done));
    this.controller.kill('SIGTERM');
    await exited;
  }
}
