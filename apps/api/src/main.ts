import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { loadConfigOrExit, registerRunningBuild } from '@app/common';
import { createApiApp } from './create-api-app';

async function main(): Promise<void> {
  registerRunningBuild();
  const config = loadConfigOrExit();
  const app = await createApiApp(config);
  await app.listen({ port: config.port, host: '0.0.0.0' });
  new Logger('Api').log(`listening on port ${config.port}, merchant API under ${config.apiPrefix}`);
}

void main();
