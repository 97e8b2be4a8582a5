import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AppConfig, StartupRefusal } from '@app/common';
import { QueueBackendRepository, StartupChecks } from '@app/db';

/**
 * SPEC 10: every process of a deployment uses one queue backend. The first process to start
 * records its own in the database; one whose QUEUE_BACKEND differs refuses to start, so a
 * worker missing REDIS_URL never takes jobs from a PostgreSQL queue the API does not feed.
 */
@Injectable()
export class QueueBackendCheck implements OnModuleInit {
  constructor(
    private readonly config: AppConfig,
    private readonly checks: StartupChecks,
    private readonly record: QueueBackendRepository,
  ) {}

  async onModuleInit(): Promise<void> {
    // The table exists only once the schema is current: that check first, and its refusal rather than this one.
    await this.checks.run();
    const mine = this.config.queueBackend;
    const recorded = await this.record.recordOrRead(mine);
    if (recorded === mine) return;
    throw new StartupRefusal(
      `QUEUE_BACKEND: this process would run its queues on ${mine}, but the database records ${recorded}, the backend of this deployment's other processes: ` +
        `give every process the same (${recorded === 'redis' ? 'REDIS_URL' : 'QUEUE_BACKEND=postgres'}); to move the deployment, stop every process and run \`queue:backend --set ${mine}\``,
    );
  }
}
