import { Controller, Get, Query, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RegionRateLimitGuard } from './region-rate-limit.guard';
import { RegionService } from './region.service';

// Query values are checked by RegionService, not a DTO: the answers are ready bytes and a class-validator pass would cost more than serving them.
type RegionQuery = Record<string, unknown>;

/** SPEC 4 at its absolute path (no {base_url}); answers are sent as precomputed bytes through the Fastify reply. */
@Controller('addons/paychannel/channel/processor')
@UseGuards(RegionRateLimitGuard)
export class RegionController {
  constructor(private readonly region: RegionService) {}

  @Get('regionData')
  regionData(@Req() request: FastifyRequest, @Res() reply: FastifyReply): void {
    this.region.regionData().send(request, reply);
  }

  @Get('provinceList')
  provinceList(@Req() request: FastifyRequest, @Res() reply: FastifyReply): void {
    this.region.provinceList().send(request, reply);
  }

  @Get('cityList')
  cityList(@Query() query: RegionQuery, @Req() request: FastifyRequest, @Res() reply: FastifyReply): void {
    this.region.cityList(query.province).send(request, reply);
  }

  @Get('districtList')
  districtList(@Query() query: RegionQuery, @Req() request: FastifyRequest, @Res() reply: FastifyReply): void {
    this.region.districtList(query.province, query.city).send(request, reply);
  }
}
