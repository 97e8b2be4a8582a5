import type { RawBodyRequest } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

/** The body exactly as received (NestFactory's `rawBody: true`); null when the request had none. */
export function rawBodyOf(request: FastifyRequest): string | null {
  const raw = (request as RawBodyRequest<FastifyRequest>).rawBody;
  return raw ? raw.toString('utf8') : null;
}
