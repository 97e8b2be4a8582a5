import type { Job } from 'bullmq';
import { JOB_QUEUE, type JobName, type JobPayloads } from '@app/common';

export type JobHandler<N extends JobName> = (payload: JobPayloads[N], job: Job<JobPayloads[N]>) => Promise<unknown>;

/** A handler for every job name: a missing one does not compile. */
export type JobHandlers = { [N in JobName]: JobHandler<N> };

/** Thrown at start-up: the worker must not run with a job name it cannot handle. */
export class MissingJobHandlerError extends Error {
  constructor(names: string[]) {
    super(`no handler for job ${names.map((n) => `'${n}'`).join(', ')}: refusing to start`);
    this.name = 'MissingJobHandlerError';
  }
}

/**
 * The runtime check behind the type: every name of the contract (libs/common/queues.ts) must
 * have a function, whatever a cast or a partial registration did.
 */
export function assertEveryJobHandled(handlers: Partial<Record<string, unknown>>): asserts handlers is JobHandlers {
  const missing = (Object.keys(JOB_QUEUE) as JobName[]).filter((name) => typeof handlers[name] !== 'function');
  if (missing.length > 0) throw new MissingJobHandlerError(missing);
}
