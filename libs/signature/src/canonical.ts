/** JSON with keys sorted by byte order at every level and no whitespace (SPEC 3). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value)
    .sort(compareBytes)
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

/** Byte order of the UTF-8 encodings, which is not JavaScript's UTF-16 order for astral characters. */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
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
