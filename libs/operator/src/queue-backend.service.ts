import { Injectable } from '@nestjs/common';
import { QueueBackendRepository, type QueueBackendName } from '@app/db';
import { OperatorInputError } from './operator-input-error';

/** `queue:backend`: the queue backend the database holds for this deployment, and moving it (SPEC 10). */
@Injectable()
export class QueueBackendService {
  constructor(private readonly backends: QueueBackendRepository) {}

  async show(): Promise<{ backend: QueueBackendName | null }> {
    return { backend: await this.backends.read() };
  }

  /** Only with every process stopped: the next ones must all start with this backend. */
  async set(backend: string): Promise<{ backend: QueueBackendName }> {
    if (backend !== 'redis' && backend !== 'postgres') throw new OperatorInputError('set', 'must be redis or postgres');
    await this.backends.set(backend);
    return { backend };
  }
}
