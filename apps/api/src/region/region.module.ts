import { Module } from '@nestjs/common';
import { RegionRoutes } from './region-routes';
import { RegionService } from './region.service';

/** Province, city and district data (SPEC 4), outside {base_url}: its routes are registered on Fastify by RegionRoutes. */
@Module({
  providers: [RegionService, RegionRoutes],
})
export class RegionModule {}
