import { Module } from '@nestjs/common';
import { RegionRateLimitGuard } from './region-rate-limit.guard';
import { RegionController } from './region.controller';
import { RegionService } from './region.service';

/** Province, city and district data (SPEC 4), outside {base_url}: register it beside, not among, the prefixed modules. */
@Module({
  controllers: [RegionController],
  providers: [RegionService, RegionRateLimitGuard],
})
export class RegionModule {}
