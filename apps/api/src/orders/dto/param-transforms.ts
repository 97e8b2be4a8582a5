import { canonicalNotifyUrl } from '@app/common';

/** Signed parameters arrive as JSON values or as text (forms, query string): "12" is the integer 12. */
export function toInteger({ value }: { value: unknown }): unknown {
  if (typeof value === 'string' && /^-?\d{1,15}$/.test(value)) return Number(value);
  return value;
}

/** An empty string is left out of the signature, so an optional parameter given as "" is absent. */
export function emptyToUndefined({ value }: { value: unknown }): unknown {
  return value === '' || value === null ? undefined : value;
}

/** An optional notify_url, in the canonical form it is stored in (SPEC 7 Address); an invalid one is left for the validator. */
export function toNotifyUrl({ value }: { value: unknown }): unknown {
  return canonicalNotifyUrl(emptyToUndefined({ value }));
}
