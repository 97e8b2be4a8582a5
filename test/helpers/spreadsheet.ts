/** A cell as a spreadsheet (Excel, WPS) reads it from a CSV file. */
export type SheetCell =
  { type: 'text'; text: string } | { type: 'number'; value: number; digits: number; source: string } | { type: 'formula'; source: string };

/** RFC 4180 fields of each line (quotes, doubled quotes, commas and line breaks inside quotes). */
export function csvFields(csv: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  const endField = () => {
    row.push(field);
    field = '';
  };
  for (let i = 0; i < csv.length; i++) {
    const c = csv[i];
    if (quoted && c === '"' && csv[i + 1] === '"') {
      field += '"';
      i++;
    } else if (quoted && c === '"') {
      quoted = false;
    } else if (quoted) {
      field += c;
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      endField();
    } else if (c === '\n' || (c === '\r' && csv[i + 1] === '\n')) {
      if (c === '\r') i++;
      endField();
      rows.push(row);
      row = [];
    } else {
      field += c;
    }
  }
  if (field !== '' || row.length > 0) {
    endField();
    rows.push(row);
  }
  return rows;
}

/**
 * A CSV read as a spreadsheet opening it does: without a BOM the bytes are read as the local
 * code page (refused here: Chinese would be garbled); `="..."` is a formula whose value is its
 * text; `'` starts text; anything else that looks like a number becomes a double, which keeps
 * 15 significant digits (a 22-digit order number becomes 2.02611E+21); any other `=`, `+`,
 * `-`, `@` start is a formula.
 */
export function readAsSpreadsheet(csv: string): SheetCell[][] {
  if (!csv.startsWith('\uFEFF')) throw new Error('no UTF-8 BOM: a spreadsheet reads the file in the local code page');
  return csvFields(csv.slice(1)).map((row) =>
    row.map((source): SheetCell => {
      const text = /^="((?:[^"]|"")*)"$/.exec(source);
      if (text) return { type: 'text', text: text[1].replace(/""/g, '"') };
      if (source.startsWith("'")) return { type: 'text', text: source.slice(1) };
      if (/^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?%?\s*$/.test(source)) {
        const digits = source
          .replace(/[eE].*$/, '')
          .replace(/\D/g, '')
          .replace(/^0+/, '').length;
        return { type: 'number', value: Number(source.replace('%', '')), digits, source };
      }
      if (/^[=+\-@]/.test(source)) return { type: 'formula', source };
      return { type: 'text', text: source };
    }),
  );
}

/** The numbers a spreadsheet would round (15 or more significant digits), with where they are: none is the rule (SPEC 6). */
export function numbersASpreadsheetWouldRound(sheet: SheetCell[][]): string[] {
  return sheet.flatMap((row, r) =>
    row.flatMap((cell, c) => (cell.type === 'number' && cell.digits >= 15 ? [`row ${r + 1} column ${c + 1}: ${cell.source}`] : [])),
  );
}

/** What the spreadsheet shows in a cell, as text. */
export function shown(cell: SheetCell): string {
  return cell.type === 'text' ? cell.text : cell.type === 'number' ? String(cell.value) : cell.source;
}
