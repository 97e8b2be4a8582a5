import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { ErrorCode } from '@app/common';
import { ApiErrorAnswers, METRICS_SCHEME } from '../http/api-docs';
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
  @ApiTags('operations')
  // The bearer only when METRICS_TOKEN is set; otherwise open (the empty requirement).
  @ApiSecurity(METRICS_SCHEME)
  @ApiSecurity({})
  @ApiOperation({
    summary: 'Prometheus metrics',
    description: 'The text exposition format. With METRICS_TOKEN set, `Authorization: Bearer <token>` is required (40100 otherwise); unset, the route is open.',
  })
  @ApiOkResponse({ description: 'The metrics', content: { 'text/plain': { schema: { type: 'string' } } } })
  @ApiErrorAnswers(ErrorCode.AuthMissing, ErrorCode.Internal)
  @UseGuards(MetricsTokenGuard)
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    this.cachedGauges.refreshIfStale();
    return this.metrics.registry.metrics();
  }
}
