/** One CSV line into its fields (double quotes as RFC 4180), for the bill parsers. */
export function csvFields(line: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field.trim() === '') {
      quoted = true;
      field = '';
    } else if (c === ',') {
      fields.push(field);
      field = '';
    } else field += c;
  }
  fields.push(field);
  return fields;
}

/** Yuan text with up to `decimals` places (WeChat's fees have 5) to fen, half up; null when not a number. */
export function yuanToFen(text: string, decimals = 2): number | null {
  const m = new RegExp(`^(-)?(\\d{1,12})(?:\\.(\\d{1,${decimals}}))?$`).exec(text.trim());
  if (!m) return null;
  const fraction = (m[3] ?? '').padEnd(decimals, '0');
  const scaled = BigInt(m[2]) * 10n ** BigInt(decimals) + BigInt(fraction || '0');
  const unit = 10n ** BigInt(decimals - 2);
  const fen = Number((scaled + unit / 2n) / unit);
  return m[1] ? -fen : fen;
}
