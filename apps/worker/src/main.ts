import 'reflect-metadata';
import { loadConfigOrExit, workerHealthFile } from '@app/common/config';
import { exitOnStartupFailure } from '@app/common/startup';
import { helpIfAsked } from '@app/common/process-help';
import { heartbeatProblem } from './health/heartbeat-file';

/** `--health`, the container healthcheck: it runs every few seconds, so it reads WORKER_HEALTH_FILE and that file, nothing else. */
function reportHealth(heartbeatFile: string): never {
  const problem = heartbeatProblem(heartbeatFile, Date.now());
  process.stdout.write(problem ? `worker unhealthy: ${problem}\n` : 'worker healthy\n');
  process.exit(problem ? 1 : 0);
}

async function main(): Promise<void> {
  helpIfAsked('worker');
  if (process.argv.includes('--health')) reportHealth(workerHealthFile());
  const config = loadConfigOrExit(process.env, 'Worker');
  const { runWorker } = await import('./run-worker.js');
  await runWorker(config);
}

main().catch((err: unknown) => exitOnStartupFailure('Worker', err));
