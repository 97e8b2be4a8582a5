import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

export type QueueBackendName = 'redis' | 'postgres';

/** The deployment's queue backend as the database records it (SPEC 10). */
@Injectable()
export class QueueBackendRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Records `backend` unless one is recorded already (the first process to start wins); returns the recorded one. */
  async recordOrRead(backend: QueueBackendName): Promise<QueueBackendName> {
    await this.dataSource.query(`INSERT INTO "queue_backend" ("id", "backend") VALUES (1, $1) ON CONFLICT ("id") DO NOTHING`, [backend]);
    const [row] = await this.dataSource.query<{ backend: QueueBackendName }[]>(`SELECT "backend" FROM "queue_backend" WHERE "id" = 1`);
    return row.backend;
  }

  /** The recorded backend, or null before any process started. */
  async read(): Promise<QueueBackendName | null> {
    const [row] = await this.dataSource.query<{ backend: QueueBackendName }[]>(`SELECT "backend" FROM "queue_backend" WHERE "id" = 1`);
    return row?.backend ?? null;
  }

  /** An operator moving the deployment to another backend (every process stopped): the next starts must use it. */
  async set(backend: QueueBackendName): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO "queue_backend" ("id", "backend") VALUES (1, $1) ON CONFLICT ("id") DO UPDATE SET "backend" = EXCLUDED."backend", "recorded_at" = now()`,
      [backend],
    );
  }
}
