import { type Dispatcher, request } from 'undici';
import { ChannelError } from './channel-adapter';

/** A GET to a channel: through its proxy when it has one, cancelled by `signal`, at most 64 KiB read. */
export function channelGet(url: string, dispatcher: Dispatcher | undefined, signal: AbortSignal): Promise<{ status: number; body: string }> {
  return channelRequest(url, dispatcher, signal);
}

/** A form POST to a channel, under the same rules as channelGet; the form may carry the channel's key. */
export function channelPostForm(
  url: string,
  form: Record<string, string>,
  dispatcher: Dispatcher | undefined,
  signal: AbortSignal,
): Promise<{ status: number; body: string }> {
  return channelRequest(url, dispatcher, signal, new URLSearchParams(form).toString());
}

async function channelRequest(url: string, dispatcher: Dispatcher | undefined, signal: AbortSignal, form?: string): Promise<{ status: number; body: string }> {
  // undici 7 follows no redirects unless told to.
  const init: ChannelRequestInit =
    form === undefined ? { method: 'GET', headers: {} } : { method: 'POST', body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } };
  const { status, body } = await channelFetch(url, init, dispatcher, signal);
  return { status, body };
}

interface ChannelRequestInit {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

/** What a channel call reads at most, and how its errors start. */
interface ReadLimit {
  maxBytes: number;
  tooLarge: string;
  failed: string;
}

const ANSWER_LIMIT: ReadLimit = { maxBytes: 64 * 1024, tooLarge: 'channel answer larger than 64 KiB', failed: 'channel request' };

/** A day's bill of a big merchant runs to megabytes; more than this is not a bill we should hold in memory. */
const BILL_LIMIT: ReadLimit = { maxBytes: 64 * 1024 * 1024, tooLarge: 'channel bill larger than 64 MiB', failed: 'channel bill download' };

/**
 * The one way this service calls a channel: through its proxy, cancelled by `signal`, the answer
 * read up to `limit` bytes, and no URL in an error (it may carry the channel's key or a token).
 */
async function channelCall(
  url: string,
  init: ChannelRequestInit,
  dispatcher: Dispatcher | undefined,
  signal: AbortSignal,
  limit: ReadLimit,
  respondBy: number | null = null,
): Promise<{ status: number; headers: ChannelAnswer['headers']; body: Buffer }> {
  // A link that works for a while only (alipay's bill): its answer must have begun by then.
  const late = respondBy === null ? null : new AbortController();
  const lateTimer = late ? setTimeout(() => late.abort(), Math.max(0, respondBy! - Date.now())) : null;
  try {
    const res = await request(url, {
      method: init.method,
      headers: init.headers,
      body: init.body,
      dispatcher,
      signal: late ? AbortSignal.any([signal, late.signal]) : signal,
    });
    if (lateTimer) clearTimeout(lateTimer);
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > limit.maxBytes) {
        res.body.destroy();
        throw new ChannelError(limit.tooLarge);
      }
      chunks.push(chunk as Buffer);
    }
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) };
  } catch (err) {
    if (err instanceof ChannelError) throw err;
    const reason = signal.aborted
      ? 'timed out'
      : late?.signal.aborted
        ? "did not answer within the link's lifetime"
        : ((err as { code?: string }).code ?? 'request failed');
    throw new ChannelError(`${limit.failed} ${reason}`, { cause: err });
  } finally {
    if (lateTimer) clearTimeout(lateTimer);
  }
}

export interface ChannelAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Any request to a channel (signed JSON APIs need their own method, headers and the answer's
 * headers), under channelGet's rules: proxy, cancellation, 64 KiB, no URL in an error.
 */
export async function channelFetch(url: string, init: ChannelRequestInit, dispatcher: Dispatcher | undefined, signal: AbortSignal): Promise<ChannelAnswer> {
  const answer = await channelCall(url, init, dispatcher, signal, ANSWER_LIMIT);
  return { ...answer, body: answer.body.toString('utf8') };
}

/**
 * A bill download: the bytes as they came (a zip or gzip must not go through a text decoding),
 * under channelFetch's other rules (proxy, cancellation, no URL in an error, which may carry a
 * token), at most 64 MiB. `respondBy` (epoch ms): the link expires then, so its answer must have
 * begun by that time.
 */
export async function channelDownload(
  url: string,
  headers: Record<string, string>,
  dispatcher: Dispatcher | undefined,
  signal: AbortSignal,
  respondBy: number | null = null,
): Promise<{ status: number; body: Buffer }> {
  const { status, body } = await channelCall(url, { method: 'GET', headers }, dispatcher, signal, BILL_LIMIT, respondBy);
  return { status, body };
}
