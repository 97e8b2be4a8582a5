import 'reflect-metadata';
import { loadConfigOrExit } from '@app/common/config';
import { exitOnStartupFailure } from '@app/common/startup';
import { heartbeatProblem } from './health/heartbeat-file';

/** `--health`, the container healthcheck: it runs every few seconds, so it loads the config and reads one file. */
function reportHealth(heartbeatFile: string): never {
  const problem = heartbeatProblem(heartbeatFile, Date.now());
  process.stdout.write(problem ? `worker unhealthy: ${problem}\n` : 'worker healthy\n');
  process.exit(problem ? 1 : 0);
}

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  if (process.argv.includes('--health')) reportHealth(config.workerHealthFile);
  const { runWorker } = await import('./run-worker.js');
  await runWorker(config);
}

main().catch((err: unknown) => exitOnStartupFailure('Worker', err));
