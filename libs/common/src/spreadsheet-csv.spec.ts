import { CSV_BOM, csvHeader, csvIdentifier, csvNumber, csvRow, csvText } from './spreadsheet-csv';

describe('spreadsheet CSV (SPEC 6)', () => {
  it('starts with the BOM and the column names, lines end in CRLF', () => {
    expect(csvHeader(['订单号', 'Amount (yuan)'])).toBe(`${CSV_BOM}订单号,Amount (yuan)\r\n`);
  });

  it('writes an identifier as a text formula, quoted as RFC 4180 says, whatever it looks like', () => {
    expect(csvRow([csvIdentifier('2026112712000012345678')])).toBe('"=""2026112712000012345678"""\r\n');
    expect(csvRow([csvIdentifier('-1'), csvIdentifier('007'), csvIdentifier(null), csvIdentifier('')])).toBe('"=""-1""","=""007""",,\r\n');
  });

  it('keeps numbers as numbers while a spreadsheet can hold them exactly, and refuses to write one it would round', () => {
    expect(csvRow([csvNumber('100.00'), csvNumber(-3), csvNumber('0.00600000'), csvNumber('1234567890.12')])).toBe('100.00,-3,0.00600000,1234567890.12\r\n');
    expect(() => csvRow([csvNumber('2026112712000012345678')])).toThrow(/keeps exactly/);
    expect(() => csvRow([csvNumber('1e21')])).toThrow();
    expect(() => csvRow([csvNumber('12,5')])).toThrow();
  });

  it('never leaves text a spreadsheet would run as a formula, and quotes commas, quotes and line breaks', () => {
    expect(csvRow([csvText('=HYPERLINK("http://x")'), csvText('+1'), csvText('@SUM(A1)'), csvText('-2')])).toBe(
      `"'=HYPERLINK(""http://x"")",'+1,'@SUM(A1),'-2\r\n`,
    );
    expect(csvRow([csvText('a,b'), csvText('line\nbreak'), csvText('已完成'), csvText(null)])).toBe('"a,b","line\nbreak",已完成,\r\n');
  });
});
