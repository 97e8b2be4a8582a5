import { type Dispatcher, request } from 'undici';
import { ChannelError } from './channel-adapter';

const MAX_ANSWER_BYTES = 64 * 1024;

/** A GET to a channel: through its proxy when it has one, cancelled by `signal`, at most 64 KiB read. */
export function channelGet(url: string, dispatcher: Dispatcher | undefined, signal: AbortSignal): Promise<{ status: number; body: string }> {
  return channelRequest(url, dispatcher, signal);
}

/** A form POST to a channel, under the same rules as channelGet; the form may carry the channel's key. */
export function channelPostForm(url: string, form: Record<string, string>, dispatcher: Dispatcher | undefined, signal: AbortSignal): Promise<{ status: number; body: string }> {
  return channelRequest(url, dispatcher, signal, new URLSearchParams(form).toString());
}

async function channelRequest(url: string, dispatcher: Dispatcher | undefined, signal: AbortSignal, form?: string): Promise<{ status: number; body: string }> {
  try {
    // undici 7 follows no redirects unless told to.
    const res = await request(url, {
      method: form === undefined ? 'GET' : 'POST',
      dispatcher,
      signal,
      ...(form === undefined ? {} : { body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
    });
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_ANSWER_BYTES) {
        res.body.destroy();
        throw new ChannelError('channel answer larger than 64 KiB');
      }
      chunks.push(chunk as Buffer);
    }
    return { status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') };
  } catch (err) {
    if (err instanceof ChannelError) throw err;
    // The URL carries the channel's key (epay's query): never put it in the message.
    const reason = signal.aborted ? 'timed out' : ((err as { code?: string }).code ?? 'request failed');
    throw new ChannelError(`channel request ${reason}`, { cause: err });
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
export async function channelFetch(
  url: string,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
  dispatcher: Dispatcher | undefined,
  signal: AbortSignal,
): Promise<ChannelAnswer> {
  try {
    const res = await request(url, { method: init.method, headers: init.headers, body: init.body, dispatcher, signal });
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_ANSWER_BYTES) {
        res.body.destroy();
        throw new ChannelError('channel answer larger than 64 KiB');
      }
      chunks.push(chunk as Buffer);
    }
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') };
  } catch (err) {
    if (err instanceof ChannelError) throw err;
    const reason = signal.aborted ? 'timed out' : ((err as { code?: string }).code ?? 'request failed');
    throw new ChannelError(`channel request ${reason}`, { cause: err });
  }
}

/** A day's bill of a big merchant runs to megabytes; more than this is not a bill we should hold in memory. */
const MAX_BILL_BYTES = 64 * 1024 * 1024;

/**
 * A bill download: the bytes as they came (a zip or gzip must not go through a text decoding),
 * under channelFetch's other rules (proxy, cancellation, no URL in an error, which may carry a token).
 */
export async function channelDownload(url: string, headers: Record<string, string>, dispatcher: Dispatcher | undefined, signal: AbortSignal): Promise<{ status: number; body: Buffer }> {
  try {
    const res = await request(url, { method: 'GET', headers, dispatcher, signal });
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_BILL_BYTES) {
        res.body.destroy();
        throw new ChannelError('channel bill larger than 64 MiB');
      }
      chunks.push(chunk as Buffer);
    }
    return { status: res.statusCode, body: Buffer.concat(chunks) };
  } catch (err) {
    if (err instanceof ChannelError) throw err;
    const reason = signal.aborted ? 'timed out' : ((err as { code?: string }).code ?? 'request failed');
    throw new ChannelError(`channel bill download ${reason}`, { cause: err });
  }
}
