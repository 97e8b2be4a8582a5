import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppConfig, DomainError, ErrorCode } from '@app/common';
import { errorResponses } from '../http/api-docs';
import { FixedWindowLimiter } from './fixed-window-limiter';
import type { PrecomputedResponse } from './precomputed-response';
import { RegionService } from './region.service';

/** SPEC 0: the region operations sit at this absolute path, outside {base_url}. */
export const REGION_BASE_PATH = '/addons/paychannel/channel/processor';

type RegionQuery = Record<string, unknown>;

interface RegionOperation {
  name: string;
  summary: string;
  /** Required query parameters; RegionService checks them (40000 when missing, 40401 when unknown). */
  parameters: { name: string; description?: string }[];
  answer(region: RegionService, query: RegionQuery): PrecomputedResponse;
}

/** The four operations of SPEC 4: what the routes serve and what the OpenAPI document says of them. */
const REGION_OPERATIONS: readonly RegionOperation[] = [
  {
    name: 'regionData',
    summary: 'The whole province / city / district tree (large: fetch once and cache)',
    parameters: [],
    answer: (region) => region.regionData(),
  },
  {
    name: 'provinceList',
    summary: 'Provinces as [{name, code}]',
    parameters: [],
    answer: (region) => region.provinceList(),
  },
  {
    name: 'cityList',
    summary: 'Cities of a province as [{name, code}]',
    parameters: [{ name: 'province', description: 'Exact province name, e.g. 广东省' }],
    answer: (region, query) => region.cityList(query.province),
  },
  {
    name: 'districtList',
    summary: 'Districts of a city as [{name, code}]; [] for a city without districts',
    parameters: [{ name: 'province' }, { name: 'city', description: 'Exact city name from cityList (municipalities: 市辖区 or 县)' }],
    answer: (region, query) => region.districtList(query.province, query.city),
  },
];

/**
 * The region routes, registered on Fastify itself rather than as a Nest controller, and answered
 * from the adapter's first request hook: an answer is a few hundred ready bytes, and Nest's
 * guards, interceptors, parameter resolution, middleware and hooks cost twice what sending them
 * does. What Nest gave them stays: errors reach the envelope filter through Fastify's error
 * handler (Nest installs it), a wrong method finds no route and becomes 40500, X-Request-Id is
 * set here as the app's hook sets it elsewhere, and /metrics counts them by route in onResponse.
 * Skipped for them: Nest middleware (request logging ignores these paths anyway), the adapter's
 * CORS and security-header hooks, which this app does not enable (enabling them would need them
 * here too), and its early 503 while Nest shuts down (these bytes need nothing that stops).
 */
@Injectable()
export class RegionRoutes implements OnModuleInit {
  // Per client IP and per instance (SPEC 8): the answers are cheap bytes, so the limit guards each process rather than a shared budget.
  private readonly limiter: FixedWindowLimiter;
  private readonly operationsByPath = new Map<string, RegionOperation>();

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly region: RegionService,
    config: AppConfig,
  ) {
    this.limiter = new FixedWindowLimiter(config.rateLimitIpPerSecond, 1000);
  }

  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    const fastify = adapter.getInstance<FastifyInstance>();
    for (const operation of REGION_OPERATIONS) {
      const path = `${REGION_BASE_PATH}/${operation.name}`;
      this.operationsByPath.set(path, operation);
      // GET only: Fastify answers HEAD from it. Reached when the hook below passes a request on (a path spelled another way).
      fastify.get(path, (request: FastifyRequest, reply: FastifyReply) => this.serve(operation, request, reply));
    }
    adapter.setOnRequestHook((request: FastifyRequest, reply: FastifyReply, done: (err?: unknown) => void) => this.answerEarly(request, reply, done));
  }

  /** Runs before every other request hook: a request Fastify routed to a region path exactly as written is answered here. */
  private answerEarly(request: FastifyRequest, reply: FastifyReply, done: (err?: unknown) => void): void {
    const url = request.raw.url ?? '';
    const queryStart = url.indexOf('?');
    const operation = this.operationsByPath.get(queryStart === -1 ? url : url.slice(0, queryStart));
    if (operation === undefined || request.is404) {
      done();
      return;
    }
    reply.header('x-request-id', request.id);
    try {
      this.serve(operation, request, reply);
    } catch (err) {
      done(err);
    }
  }

  private serve(operation: RegionOperation, request: FastifyRequest, reply: FastifyReply): void {
    const msBeforeNext = this.limiter.consume(request.ip);
    if (msBeforeNext > 0) throw DomainError.rateLimited(msBeforeNext);
    operation.answer(this.region, request.query as RegionQuery).send(request, reply);
  }
}

/** The region operations for the OpenAPI document, which only sees Nest controllers on its own. */
export function regionOpenApiPaths(): OpenAPIObject['paths'] {
  return Object.fromEntries(
    REGION_OPERATIONS.map((operation) => [
      `${REGION_BASE_PATH}/${operation.name}`,
      {
        get: {
          // The ids these had as a Nest controller: clients generated from the document keep their method names.
          operationId: `RegionController_${operation.name}`,
          summary: operation.summary,
          tags: ['region'],
          // No authentication: rate-limited per client IP.
          security: [{}],
          parameters: operation.parameters.map(({ name, description }) => ({
            name,
            in: 'query' as const,
            required: true,
            description,
            schema: { type: 'string' as const },
          })),
          responses: {
            200: { description: 'The envelope; data as the interface 2.4 gives it. ETag, 304, gzip and brotli supported.' },
            304: { description: 'Not modified: the If-None-Match ETag is current' },
            ...errorResponses([
              ...(operation.parameters.length > 0 ? [ErrorCode.BadRequest, ErrorCode.RegionNotFound] : []),
              ErrorCode.RateLimited,
              ErrorCode.Internal,
            ]),
          },
        },
      },
    ]),
  );
}
