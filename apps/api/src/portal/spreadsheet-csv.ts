/** One CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180). */
export function csvCell(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/** One CSV line, CRLF-terminated as spreadsheets expect. */
export function csvRow(cells: string[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

/**
 * A number-like identifier (an order_no of 22 digits) as text to a spreadsheet: Excel, Numbers,
 * LibreOffice and Google Sheets read `="..."` as the text itself, where the bare digits would
 * become 2.02611E+21 and lose their last digits. Only for our identifiers ([A-Za-z0-9_-]).
 */
export function spreadsheetText(id: string): string {
  if (!/^[A-Za-z0-9_-]*$/.test(id)) throw new Error(`not an identifier: ${JSON.stringify(id)}`);
  return `="${id}"`;
}
