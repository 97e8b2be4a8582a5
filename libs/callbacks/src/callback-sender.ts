import { Agent, request } from 'undici';
import { clientSpan } from '@app/common';
import { BlockedAddressError, assertLiteralAllowed, guardedLookup } from './address-guard';
import { parseRetryAfter } from './retry-policy';

/** SPEC 7: a merchant has this long to answer. */
export const CALLBACK_TIMEOUT_MS = 10_000;
/** SPEC 7: at most this much of an answer is read. */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** The delivery log keeps this much of an answer. */
export const EXCERPT_BYTES = 1024;

export interface SendOutcome {
  ok: boolean;
  httpStatus: number | null;
  durationMs: number;
  /** The first 1 KiB of the answer, as text. */
  excerpt: string | null;
  /** Why the attempt failed; null when it succeeded. */
  error: string | null;
  /** A Retry-After on 429 or 503, in milliseconds. */
  retryAfterMs: number | null;
  /** The address was refused by the SSRF guard (a private or reserved address): no connection was made. */
  blocked?: boolean;
}

export interface CallbackSenderOptions {
  allowPrivate: boolean;
  timeoutMs?: number;
}

/** At most EXCERPT_BYTES of UTF-8, cut between characters; without NUL, which PostgreSQL text cannot hold. */
function excerptOf(bytes: Buffer): string {
  const text = wholeCharacters(bytes.subarray(0, EXCERPT_BYTES)).replaceAll('\u0000', '');
  // Each invalid byte became U+FFFD, three bytes: cut again, now on valid UTF-8.
  return Buffer.byteLength(text, 'utf8') <= EXCERPT_BYTES ? text : wholeCharacters(Buffer.from(text, 'utf8').subarray(0, EXCERPT_BYTES));
}

function wholeCharacters(bytes: Uint8Array): string {
  // A streaming decode holds back a character cut at the end instead of writing U+FFFD for it.
  return new TextDecoder('utf-8').decode(bytes, { stream: true });
}

/** An accepted answer: 2xx whose body, trimmed, is `success` in any case or empty. */
export function isAcceptedAnswer(status: number, body: string): boolean {
  const text = body.trim().toLowerCase();
  return status >= 200 && status < 300 && (text === '' || text === 'success');
}

/** The host a span may name: never the path or query, which may carry a merchant's token. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

/** The guard's refusal, thrown directly or as the cause of undici's connection error. */
function isBlocked(err: unknown): boolean {
  return err instanceof BlockedAddressError || (err as { cause?: unknown })?.cause instanceof BlockedAddressError;
}

function describe(err: unknown, timeoutMs: number): string {
  if (err instanceof BlockedAddressError) return err.message;
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `timeout: no complete answer within ${timeoutMs} ms`;
  if (e?.cause instanceof BlockedAddressError) return e.cause.message;
  const code = e?.code ? `${e.code}: ` : '';
  return `${code}${e?.message ?? String(err)}`.slice(0, 500);
}

/**
 * POSTs one callback: SSRF-guarded connection (the address checked is the address dialled), a
 * 10 s budget for the whole exchange, no redirects, at most 64 KiB of the answer read. It never
 * throws: the outcome says what happened, and the caller decides about retries.
 */
export class CallbackSender {
  private readonly agent: Agent;
  readonly timeoutMs: number;

  constructor(private readonly options: CallbackSenderOptions) {
    this.timeoutMs = options.timeoutMs ?? CALLBACK_TIMEOUT_MS;
    this.agent = new Agent({
      connect: options.allowPrivate ? { timeout: this.timeoutMs } : { timeout: this.timeoutMs, lookup: guardedLookup },
      keepAliveTimeout: 4_000,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
    });
  }

  /** The POST, in a client span of the job's trace when traces are on (issue 40 item 6). */
  send(url: string, body: string, headers: Record<string, string>): Promise<SendOutcome> {
    return clientSpan(
      'callback POST',
      () => ({ 'http.request.method': 'POST', 'server.address': hostOf(url) }),
      () => this.post(url, body, headers),
      (outcome) => ({ attributes: { 'http.response.status_code': outcome.httpStatus ?? 0 }, error: outcome.error }),
    );
  }

  private async post(url: string, body: string, headers: Record<string, string>): Promise<SendOutcome> {
    const started = performance.now();
    const took = (): number => Math.round(performance.now() - started);
    const failed = (error: string, httpStatus: number | null = null, excerpt: string | null = null, retryAfterMs: number | null = null): SendOutcome => ({
      ok: false,
      httpStatus,
      durationMs: took(),
      excerpt,
      error,
      retryAfterMs,
    });

    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return failed(`invalid callback address`);
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return failed(`callback address must be http or https`);
    try {
      if (!this.options.allowPrivate) assertLiteralAllowed(target.hostname);
    } catch (err) {
      return { ...failed(describe(err, this.timeoutMs)), blocked: isBlocked(err) };
    }

    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const res = await request(target, { method: 'POST', body, headers, dispatcher: this.agent, signal });
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      for await (const chunk of res.body) {
        const buf = chunk as Buffer;
        chunks.push(buf);
        size += buf.length;
        if (size > MAX_ANSWER_BYTES) {
          // Leaving the loop destroys the stream: the rest of a large answer is never read.
          truncated = true;
          break;
        }
      }
      const answer = Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES);
      const excerpt = excerptOf(answer);
      const status = res.statusCode;
      if (!truncated && isAcceptedAnswer(status, answer.toString('utf8'))) {
        return { ok: true, httpStatus: status, durationMs: took(), excerpt, error: null, retryAfterMs: null };
      }
      const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(res.headers['retry-after']) : null;
      let error: string;
      if (status >= 300 && status < 400) error = `HTTP ${status}: redirects are not followed`;
      else if (status < 200 || status >= 300) error = `HTTP ${status}`;
      else if (truncated) error = `HTTP ${status} with an answer over ${MAX_ANSWER_BYTES} bytes: expected "success" or an empty body`;
      else error = `HTTP ${status} with an unexpected answer: expected "success" or an empty body`;
      return failed(error, status, excerpt, retryAfterMs);
    } catch (err) {
      if (isBlocked(err)) return { ...failed(describe(err, this.timeoutMs)), blocked: true };
      return failed(describe(signal.aborted ? Object.assign(new Error('timeout'), { name: 'TimeoutError' }) : err, this.timeoutMs));
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}
