import {
  applyRate,
  computeOrderAmounts,
  computeSellOrderAmounts,
  formatCny,
  formatRate,
  formatRatePercent,
  formatYuan,
  merchantAmount,
  parseRate,
  parseYuan,
  storedRateE8,
} from './money';

describe('money', () => {
  it.each([
    ['100.00', 10000],
    ['100.5', 10050],
    [100.5, 10050],
    ['0.01', 1],
    ['9999999999.99', 999999999999],
    [88.8, 8880],
    ['0', 0],
  ])('parseYuan(%p) = %p fen', (input, fen) => {
    expect(parseYuan(input)).toBe(fen);
  });

  it.each(['1.001', '-1', '1e3', ' 1', '1.', '.5', '', '12345678901', 'abc', null, true, Number.NaN, 1e21, 0.001])('parseYuan refuses %p', (input) => {
    expect(parseYuan(input)).toBeNull();
  });

  it('formats yuan with two decimals', () => {
    expect(formatYuan(9940)).toBe('99.40');
    expect(formatYuan(1)).toBe('0.01');
    expect(formatYuan(999999999999)).toBe('9999999999.99');
    expect(formatYuan(0)).toBe('0.00');
  });

  it('parses and formats rates with eight decimals', () => {
    expect(parseRate('0.006')).toBe(600000);
    expect(formatRate(600000)).toBe('0.00600000');
    expect(parseRate('0.00600000')).toBe(600000);
    expect(parseRate('1')).toBe(100000000);
    expect(parseRate('0.123456789')).toBeNull();
    expect(parseRate('-0.1')).toBeNull();
  });

  it('reads a stored rate from 0 to 1 as e8', () => {
    expect(storedRateE8('0.00600000', 'order 1')).toBe(600000);
    expect(storedRateE8('0.00000000', 'order 1')).toBe(0);
    expect(storedRateE8('1.00000000', 'order 1')).toBe(100000000);
  });

  it.each(['-0.00600000', '1.00000001', '12.00000000', 'NaN', '', null, undefined, 'abc'])(
    'refuses the stored rate %p, naming its row, never reading it as 0',
    (value) => {
      expect(() => storedRateE8(value, 'merchant 7 channel 3')).toThrow(/^the stored rate of merchant 7 channel 3 is not a rate from 0 to 1/);
    },
  );

  it("merchant_amount is a top-up's cny minus service, a sell order's cny plus service, as yuan", () => {
    expect(merchantAmount({ orderType: 1, cnyFen: 10000, serviceFen: 60 })).toBe('99.40');
    expect(merchantAmount({ orderType: 1, cnyFen: 1, serviceFen: 0 })).toBe('0.01');
    expect(merchantAmount({ orderType: 2, cnyFen: 10000, serviceFen: 60 })).toBe('100.60');
  });

  it.each([
    // cny fen, service rate -> service, debited (merchant_actual)
    [10000, '0.006', 60, 10060],
    [83, '0.006', 0, 83],
    [84, '0.006', 1, 85],
    [12345, '0.0125', 154, 12499],
  ])('sell order amounts for %p fen at %p: fee as for a top-up, no deposit, cny + fee debited', (cny, rate, service, debited) => {
    const a = computeSellOrderAmounts(cny, parseRate(rate)!);
    expect([a.serviceFen, a.depositFen, a.merchantActualFen, a.merchantFen]).toEqual([service, 0, debited, debited]);
  });

  it('rounds half up', () => {
    expect(applyRate(83, 600000)).toBe(0); // 0.498
    expect(applyRate(84, 600000)).toBe(1); // 0.504
    expect(applyRate(100, 500000)).toBe(1); // 0.5 exactly
    expect(applyRate(999999999999, 99999999)).toBe(999999989999); // needs more than 53 bits in between
  });

  it.each([
    // cny fen, service rate, deposit rate -> service, deposit, actual, merchant_amount
    [10000, '0.006', '0', 60, 0, 9940, '99.40'],
    [100, '0.005', '0', 1, 0, 99, '0.99'],
    [83, '0.006', '0', 0, 0, 83, '0.83'],
    [84, '0.006', '0', 1, 0, 83, '0.83'],
    [10000, '0.006', '0.1', 60, 994, 8946, '99.40'],
    [12345, '0.0125', '0.05', 154, 610, 11581, '121.91'],
  ])('order amounts for %p fen at %p, deposit %p', (cny, rate, deposit, service, dep, actual, merchantAmount) => {
    const a = computeOrderAmounts(cny, parseRate(rate)!, parseRate(deposit)!);
    expect([a.serviceFen, a.depositFen, a.merchantActualFen, formatYuan(a.merchantFen)]).toEqual([service, dep, actual, merchantAmount]);
  });

  it('writes fen as ¥ with thousands grouped, exactly, for any size', () => {
    expect(formatCny(0)).toBe('¥0.00');
    expect(formatCny(5)).toBe('¥0.05');
    expect(formatCny(99999)).toBe('¥999.99');
    expect(formatCny(123456)).toBe('¥1,234.56');
    expect(formatCny(100000000)).toBe('¥1,000,000.00');
    expect(formatCny(123456789012345)).toBe('¥1,234,567,890,123.45');
    expect(formatCny(-123456)).toBe('-¥1,234.56');
    expect(formatCny(9007199254740991n)).toBe('¥90,071,992,547,409.91');
  });

  it('writes a rate as a percent without float rounding', () => {
    expect(formatRatePercent(parseRate('0.006')!)).toBe('0.6%');
    expect(formatRatePercent(parseRate('0.0045')!)).toBe('0.45%');
    expect(formatRatePercent(parseRate('0.00000001')!)).toBe('0.000001%');
    expect(formatRatePercent(0)).toBe('0.0%');
    expect(formatRatePercent(parseRate('1')!)).toBe('100.0%');
    expect(formatRatePercent(parseRate('0.123')!)).toBe('12.3%');
  });
});
