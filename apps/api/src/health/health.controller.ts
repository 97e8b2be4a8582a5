import { Controller, Get, Res, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags, type SchemaObject } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { HealthCheck, type HealthCheckResult, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { JobQueue } from '@app/queue';
import { pendingMigrations } from '@app/db';
import { QUEUE } from '@app/common';
import { PublicOperation } from '../http/api-docs';

const CHECK_REPORT: SchemaObject = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ok', 'error'] },
    info: { type: 'object', additionalProperties: true },
    error: { type: 'object', additionalProperties: true },
    details: { type: 'object', additionalProperties: true },
  },
};

@Controller()
@ApiTags('operations')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly jobs: JobQueue,
    private readonly dataSource: DataSource,
  ) {}

  /** The schema was checked at start; a database restored or rolled back under a running API shows here. */
  private schemaCheckedAt = 0;
  private schemaPending: Promise<string[]> = Promise.resolve([]);

  /** Liveness: answers while the process is up. */
  @Get('health')
  @PublicOperation()
  @ApiOperation({ summary: 'Liveness: answers while the process is up' })
  @ApiOkResponse({ description: 'Up', schema: { type: 'object', properties: { status: { type: 'string', enum: ['ok'] } } } })
  live(): { status: string } {
    return { status: 'ok' };
  }

  /** Readiness: the database and the queue answer; 503 otherwise, so a balancer stops sending traffic. */
  @Get('ready')
  @PublicOperation()
  @ApiOperation({ summary: 'Readiness: the database and the queue answer' })
  @ApiOkResponse({ description: 'Ready: every check is up', schema: CHECK_REPORT })
  @ApiServiceUnavailableResponse({
    description: 'Not ready: the same report, with the checks that failed under `error` (not the envelope)',
    schema: CHECK_REPORT,
  })
  @HealthCheck()
  async ready(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    try {
      return await this.check();
    } catch (err) {
      // Terminus reports "down" as an exception; the probe wants its report with a 503, not an error envelope.
      if (!(err instanceof ServiceUnavailableException)) throw err;
      reply.status(503);
      return err.getResponse() as HealthCheckResult;
    }
  }

  private check(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.db.pingCheck('database').withTimeout(1500),
      () =>
        this.indicators
          .check('queue')
          .attempt(async () => {
            await this.jobs.queue(QUEUE.orders).getJobCounts('waiting');
          })
          .withTimeout(1500),
      () =>
        this.indicators
          .check('schema')
          .attempt(async () => {
            const pending = await this.pendingMigrations();
            if (pending.length > 0) throw new Error(`${pending.length} migration(s) pending: run migration:run`);
          })
          .withTimeout(1500),
    ]);
  }

  /** At most one look every 10 s, however often the probe asks. */
  private pendingMigrations(): Promise<string[]> {
    if (Date.now() - this.schemaCheckedAt > 10_000) {
      this.schemaCheckedAt = Date.now();
      this.schemaPending = pendingMigrations(this.dataSource).catch((err: unknown) => {
        this.schemaCheckedAt = 0;
        throw err;
      });
    }
    return this.schemaPending;
  }
}
