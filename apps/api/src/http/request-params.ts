import type { FastifyRequest } from 'fastify';
import { DomainError, apiMessage } from '@app/common';

/**
 * Query string and body merged into one parameter map (SPEC 3). A key in both with
 * different values, a repeated query key, a body that is not an object, a value that is
 * not a scalar, or a text value with a NUL character (PostgreSQL text cannot hold one) is 40000.
 */
export function mergeRequestParams(request: FastifyRequest): Record<string, unknown> {
  const params: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  const query = (request.query ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(query)) {
    if (typeof query[key] !== 'string') throw DomainError.invalid(key, apiMessage('params.queryOnce'));
    params[key] = query[key];
  }
  const body = request.body;
  if (body === undefined || body === null || body === '') return params;
  if (typeof body !== 'object' || Array.isArray(body) || Buffer.isBuffer(body)) {
    throw DomainError.invalid('body', apiMessage('params.bodyObject'));
  }
  const form = request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') ?? false;
  // curl -d and many HTTP clients send JSON as a form unless told otherwise: its first "key" is then the JSON text itself.
  if (form && Object.keys(body).some((key) => /^\s*[{[]/.test(key))) {
    throw DomainError.invalid('body', apiMessage('params.jsonAsForm'));
  }
  for (const key of Object.keys(body)) {
    const value = (body as Record<string, unknown>)[key];
    if (Array.isArray(value) && form) {
      throw DomainError.invalid(key, apiMessage('params.formOnce'));
    }
    // Refused here, before anything walks the value: a 5,000-deep array overflowed the canonicaliser's stack (a 500).
    if (typeof value === 'object' && value !== null) throw DomainError.invalid(key, apiMessage('params.scalar'));
    if (key in params && !sameScalar(params[key], value)) {
      throw DomainError.invalid(key, apiMessage('params.queryBodyDiffer'));
    }
    params[key] = value;
  }
  for (const key of Object.keys(params)) {
    if (typeof params[key] === 'string' && (params[key] as string).includes('\u0000')) throw DomainError.invalid(key, apiMessage('params.nul'));
  }
  return params;
}

/** "3" in the query and 3 in the body are the same value. */
function sameScalar(fromQuery: unknown, fromBody: unknown): boolean {
  if (fromQuery === fromBody) return true;
  return (typeof fromBody === 'number' || typeof fromBody === 'boolean') && String(fromBody) === fromQuery;
}
