import { createHash } from 'node:crypto';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { JSON_CONTENT_TYPE } from '@app/common';

type Encoding = 'br' | 'gzip' | 'identity';

interface Variant {
  encoding: Encoding;
  body: Buffer;
  etag: string;
}

// Region data changes only with a deployment; a day of caching spares clients and the service.
const CACHE_CONTROL = 'public, max-age=86400';

/**
 * One answer serialised once, with its gzip and brotli variants: a request only picks bytes,
 * so serving costs no JSON and no compression (SPEC 4: computed at start-up, served as bytes).
 */
export class PrecomputedResponse {
  private readonly identity: Variant;
  private readonly gzip: Variant;
  private readonly br: Variant;

  constructor(body: Buffer) {
    // One hash of the identity bytes names the answer; a suffix per coding keeps each variant's strong ETag distinct (RFC 9110 8.8.3).
    const tag = createHash('sha256').update(body).digest('base64url').slice(0, 27);
    this.identity = { encoding: 'identity', body, etag: `"${tag}"` };
    const gzip = gzipSync(body, { level: zlib.Z_BEST_COMPRESSION });
    const br = brotliCompressSync(body, { params: brotliParams(body.length) });
    // A tiny list can grow when compressed: then the identity bytes serve that coding too.
    this.gzip = gzip.length < body.length ? { encoding: 'gzip', body: gzip, etag: `"${tag}-gzip"` } : this.identity;
    this.br = br.length < body.length ? { encoding: 'br', body: br, etag: `"${tag}-br"` } : this.identity;
  }

  static ofJson(value: unknown): PrecomputedResponse {
    return new PrecomputedResponse(Buffer.from(JSON.stringify(value), 'utf8'));
  }

  /** Sends the variant the client accepts, or 304 when it already holds it; HEAD is Fastify's GET without the body. */
  send(request: FastifyRequest, reply: FastifyReply): void {
    const variant = this.variantFor(request.headers['accept-encoding']);
    reply.header('etag', variant.etag).header('cache-control', CACHE_CONTROL).header('vary', 'Accept-Encoding');
    if (matchesIfNoneMatch(request.headers['if-none-match'], variant.etag)) {
      void reply.code(304).send();
      return;
    }
    reply.header('content-type', JSON_CONTENT_TYPE);
    if (variant.encoding !== 'identity') reply.header('content-encoding', variant.encoding);
    void reply.code(200).send(variant.body);
  }

  private variantFor(acceptEncoding: string | undefined): Variant {
    if (!acceptEncoding) return this.identity;
    const q = parseAcceptEncoding(acceptEncoding);
    const br = q.get('br') ?? q.get('*') ?? 0;
    const gzip = q.get('gzip') ?? q.get('x-gzip') ?? q.get('*') ?? 0;
    if (br > 0 && br >= gzip) return this.br;
    if (gzip > 0) return this.gzip;
    return this.identity;
  }
}

// Quality 11 costs about 1 ms even for a short list; the hundreds of short lists take 9 and keep start-up fast.
const BROTLI_MAX_QUALITY_FROM_BYTES = 16 * 1024;

function brotliParams(length: number): Record<number, number> {
  return {
    [zlib.BROTLI_PARAM_QUALITY]: length >= BROTLI_MAX_QUALITY_FROM_BYTES ? zlib.BROTLI_MAX_QUALITY : 9,
    // A window just big enough for the body: the default 4 MiB window dominates the time of a short one.
    [zlib.BROTLI_PARAM_LGWIN]: Math.min(zlib.BROTLI_MAX_WINDOW_BITS, Math.max(zlib.BROTLI_MIN_WINDOW_BITS, Math.ceil(Math.log2(length + 1)))),
    [zlib.BROTLI_PARAM_SIZE_HINT]: length,
  };
}

/** Accept-Encoding as coding -> q (RFC 9110 12.5.3); a coding without q has 1. */
function parseAcceptEncoding(header: string): Map<string, number> {
  const q = new Map<string, number>();
  for (const item of header.split(',')) {
    const [coding, ...params] = item.split(';');
    const name = coding.trim().toLowerCase();
    if (!name) continue;
    const weight = params.map((p) => p.trim().match(/^q=([\d.]+)$/i)).find(Boolean);
    q.set(name, weight ? Number(weight[1]) || 0 : 1);
  }
  return q;
}

/** If-None-Match uses the weak comparison (RFC 9110 13.1.2): W/ is ignored, * matches any current answer. */
function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}`;
  });
}
