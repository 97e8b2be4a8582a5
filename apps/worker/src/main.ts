import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { loadConfigOrExit, registerRunningBuild } from '@app/common';
import { createWorkerApp } from './create-worker-app';

async function main(): Promise<void> {
  registerRunningBuild();
  const config = loadConfigOrExit();
  await createWorkerApp(config);
  new Logger('Worker').log(`taking jobs (queue ${config.redisUrl ? 'on Redis' : 'on PostgreSQL'}, prefix ${config.queuePrefix})`);
}

main().catch((err: Error) => {
  process.stderr.write(`Worker failed to start: ${err.message}\n`);
  process.exit(1);
});
