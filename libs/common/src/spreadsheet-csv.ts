/**
 * CSV that a spreadsheet (Excel, WPS) opens as it was meant (SPEC 6): UTF-8 with a BOM, so
 * Chinese is not read as another code page; order and refund numbers as text, never as a
 * number it rounds to 15 digits and shows as 2.02611E+21; no cell a spreadsheet would run as a
 * formula; CRLF line ends, RFC 4180 quoting. Every CSV the portal offers writes through this.
 */

/** The byte order mark Excel needs to read UTF-8. */
export const CSV_BOM = '\uFEFF';

/** A cell and how a spreadsheet must read it. */
export type CsvCell =
  /** A number to compute with (an amount, a rate, a count): at most 15 significant digits, what a spreadsheet keeps. */
  | { kind: 'number'; value: string | number }
  /** An identifier (order_no, refund_no, merchant_order_no): text whatever it looks like, kept to the last digit. */
  | { kind: 'identifier'; value: string | null }
  /** Words: text, never run as a formula. */
  | { kind: 'text'; value: string | null };

export const csvNumber = (value: string | number): CsvCell => ({ kind: 'number', value });
export const csvIdentifier = (value: string | null): CsvCell => ({ kind: 'identifier', value });
export const csvText = (value: string | null): CsvCell => ({ kind: 'text', value });

const NUMBER = /^-?\d+(\.\d+)?$/;
/** What a spreadsheet would start a formula with (OWASP's CSV injection list). */
const FORMULA_START = /^[=+\-@\t\r]/;

/** RFC 4180: a field with a quote, comma or line break is quoted, its quotes doubled. */
function quoted(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function cellText(cell: CsvCell): string {
  if (cell.kind === 'number') {
    const text = String(cell.value);
    if (!NUMBER.test(text) || text.replace(/^-|\./g, '').replace(/^0+/, '').length > 15) {
      throw new Error(`not a number a spreadsheet keeps exactly: ${text}`);
    }
    return text;
  }
  if (cell.value === null || cell.value === '') return '';
  // ="..." is a formula whose value is the text itself: Excel and WPS show the digits as written.
  if (cell.kind === 'identifier') return `="${cell.value.replace(/"/g, '""')}"`;
  // A leading apostrophe makes the spreadsheet read the rest as text (and it is not shown).
  return FORMULA_START.test(cell.value) ? `'${cell.value}` : cell.value;
}

/** One line of cells, CRLF-terminated. */
export function csvRow(cells: CsvCell[]): string {
  return `${cells.map((cell) => quoted(cellText(cell))).join(',')}\r\n`;
}

/** The first line of the file: the BOM, then the column names. */
export function csvHeader(names: string[]): string {
  return `${CSV_BOM}${csvRow(names.map(csvText))}`;
}
