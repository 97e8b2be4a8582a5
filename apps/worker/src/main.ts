import 'reflect-metadata';
import { loadConfigOrExit } from '@app/common/config';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const { runWorker } = await import('./run-worker.js');
  await runWorker(config);
}

main().catch((err: Error) => {
  process.stderr.write(`Worker failed to start: ${err.message}\n`);
  process.exit(1);
});
