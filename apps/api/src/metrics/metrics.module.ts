import { Global, Module, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { CachedGauges } from './cached-gauges';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { MetricsTokenGuard } from './metrics-token.guard';
import { ReconFigures } from './recon-figures';

@Global()
@Module({
  controllers: [MetricsController],
  providers: [MetricsService, CachedGauges, MetricsTokenGuard, ReconFigures],
  exports: [MetricsService],
})
export class MetricsModule implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: MetricsService,
  ) {}

  /** Every answer is counted by its route pattern (not its URL, which would explode the label set). */
  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    // A callback hook, not an async one: a promise per request is measurable on the small region answers.
    fastify.addHook('onResponse', (request, reply, done) => {
      const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', code: String(reply.statusCode) };
      this.metrics.requests.inc(labels);
      this.metrics.latency.observe(labels, reply.elapsedTime / 1000);
      done();
    });
  }
}
