import { Injectable } from '@nestjs/common';
import { QUEUE } from '@app/common';
import { JobQueue } from '@app/queue';

export interface WorkerQueues {
  /** Per queue: whether workers take its jobs, and its jobs by state. */
  queues: Record<string, { paused: boolean; waiting: number; active: number; delayed: number }>;
}

/**
 * worker:pause / worker:resume: every worker copy stops (or starts again) taking jobs, without
 * stopping: BullMQ's queue-wide pause, which Bull Board shows too. Jobs in flight finish.
 */
@Injectable()
export class WorkerControlService {
  constructor(private readonly jobs: JobQueue) {}

  async pause(): Promise<WorkerQueues> {
    for (const name of Object.values(QUEUE)) await this.jobs.queue(name).pause();
    return this.state();
  }

  async resume(): Promise<WorkerQueues> {
    for (const name of Object.values(QUEUE)) await this.jobs.queue(name).resume();
    return this.state();
  }

  async state(): Promise<WorkerQueues> {
    const queues: WorkerQueues['queues'] = {};
    for (const name of Object.values(QUEUE)) {
      const queue = this.jobs.queue(name);
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed');
      queues[name] = { paused: await queue.isPaused(), waiting: counts.waiting ?? 0, active: counts.active ?? 0, delayed: counts.delayed ?? 0 };
    }
    return { queues };
  }
}
