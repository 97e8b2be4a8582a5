export * from './job-queue';
export * from './queue.module';
