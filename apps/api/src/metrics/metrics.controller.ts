import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { CachedGauges } from './cached-gauges';
import { MetricsService } from './metrics.service';
import { MetricsTokenGuard } from './metrics-token.guard';

@Controller()
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    private readonly cachedGauges: CachedGauges,
  ) {}

  @Get('metrics')
  @UseGuards(MetricsTokenGuard)
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    this.cachedGauges.refreshIfStale();
    return this.metrics.registry.metrics();
  }
}
