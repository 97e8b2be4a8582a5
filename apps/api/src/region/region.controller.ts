import { Controller, Get, Query, Req, Res, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RegionRateLimitGuard } from './region-rate-limit.guard';
import { RegionService } from './region.service';

// Query values are checked by RegionService, not a DTO: the answers are ready bytes and a class-validator pass would cost more than serving them.
type RegionQuery = Record<string, unknown>;

/** SPEC 4 at its absolute path (no {base_url}); answers are sent as precomputed bytes through the Fastify reply. */
@ApiTags('region')
@ApiOkResponse({ description: 'The envelope; data as the interface 2.4 gives it. ETag, 304, gzip and brotli supported.' })
@Controller('addons/paychannel/channel/processor')
@UseGuards(RegionRateLimitGuard)
export class RegionController {
  constructor(private readonly region: RegionService) {}

  @Get('regionData')
  @ApiOperation({ summary: 'The whole province / city / district tree (large: fetch once and cache)' })
  regionData(@Req() request: FastifyRequest, @Res() reply: FastifyReply): void {
    this.region.regionData().send(request, reply);
  }

  @Get('provinceList')
  @ApiOperation({ summary: 'Provinces as [{name, code}]' })
  provinceList(@Req() request: FastifyRequest, @Res() reply: FastifyReply): void {
    this.region.provinceList().send(request, reply);
  }

  @Get('cityList')
  @ApiOperation({ summary: 'Cities of a province as [{name, code}]' })
  @ApiQuery({ name: 'province', required: true, description: 'Exact province name, e.g. 广东省' })
  cityList(@Query() query: RegionQuery, @Req() request: FastifyRequest, @Res() reply: FastifyReply): void {
    this.region.cityList(query.province).send(request, reply);
  }

  @Get('districtList')
  @ApiOperation({ summary: 'Districts of a city as [{name, code}]; [] for a city without districts' })
  @ApiQuery({ name: 'province', required: true })
  @ApiQuery({ name: 'city', required: true, description: 'Exact city name from cityList (municipalities: 市辖区 or 县)' })
  districtList(@Query() query: RegionQuery, @Req() request: FastifyRequest, @Res() reply: FastifyReply): void {
    this.region.districtList(query.province, query.city).send(request, reply);
  }
}
