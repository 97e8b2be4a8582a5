/** SPEC 5: a notify_url is at most this long, as given and as stored. */
export const MAX_NOTIFY_URL_LENGTH = 512;

/** A notify URL as SPEC 7 Address reads it: for validation, for the fairness key and for sending. */
export interface NotifyAddress {
  /** The canonical form (WHATWG serialisation): what is stored and what is dialled. */
  url: string;
  /** scheme://host:port with the default port written out: the destination of SPEC 7 Fairness. */
  destination: string;
}

const DEFAULT_PORT: Record<string, string> = { 'http:': '80', 'https:': '443' };

/**
 * The one parser of callback addresses (SPEC 7 Address): WHATWG `URL`, absolute http or https
 * with `//` written out, a host, no userinfo (not even an empty `@`), no backslash, no space or
 * control character; null for anything else. Forms WHATWG forgives (`http:/host`, `http:\\host`)
 * are refused, so what the merchant wrote and what we dial cannot be read two ways.
 */
export function parseNotifyUrl(value: unknown): NotifyAddress | null {
  if (typeof value !== 'string' || value.length > MAX_NOTIFY_URL_LENGTH) return null;
  // eslint-disable-next-line no-control-regex
  if (!/^https?:\/\//i.test(value) || /[\\\s\u0000-\u001f\u007f]/.test(value)) return null;
  const authority = value.slice(value.indexOf('//') + 2).split(/[/?#]/, 1)[0];
  if (authority === '' || authority.includes('@')) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.hostname === '' || url.username !== '' || url.password !== '' || url.href.length > MAX_NOTIFY_URL_LENGTH) return null;
  return { url: url.href, destination: `${url.protocol}//${url.hostname}:${url.port || DEFAULT_PORT[url.protocol]}` };
}

/** SPEC 5's notify_url rule, through the one parser. */
export function isHttpUrl(value: unknown): value is string {
  return parseNotifyUrl(value) !== null;
}

/** The stored form of a valid notify URL; anything else is returned as given, for the validator to refuse. */
export function canonicalNotifyUrl<T>(value: T): T | string {
  return parseNotifyUrl(value)?.url ?? value;
}
