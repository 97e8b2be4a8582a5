/** JSON with keys sorted by byte order at every level and no whitespace (SPEC 3). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value)
    .sort(compareBytes)
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

const isSurrogate = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdfff;

/** Byte order of the UTF-8 encodings, which is not JavaScript's UTF-16 order for astral characters. */
export function compareBytes(a: string, b: string): number {
  // Code point order is UTF-8 byte order; UTF-16 units follow it up to the first differing unit
  // unless a surrogate is involved (astral characters, or a lone one UTF-8 turns into U+FFFD).
  const shorter = Math.min(a.length, b.length);
  for (let i = 0; i < shorter; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (isSurrogate(x) || isSurrogate(y)) break;
    return x < y ? -1 : 1;
  }
  if (a.length === b.length && a === b) return 0;
  if (/[\uD800-\uDFFF]/.test(a) || /[\uD800-\uDFFF]/.test(b)) return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
  return a.length < b.length ? -1 : 1;
}

function writeValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    default:
      return canonicalJson(value);
  }
}

/**
 * The string a request signature covers: every parameter but `signature`, without null,
 * undefined or empty-string values, sorted by key bytes, as key=value joined by &.
 */
export function canonicalString(params: Record<string, unknown>): string {
  return Object.keys(params)
    .filter((key) => key !== 'signature')
    .filter((key) => params[key] !== null && params[key] !== undefined && params[key] !== '')
    .sort(compareBytes)
    .map((key) => `${key}=${writeValue(params[key])}`)
    .join('&');
}
