import { splitWindow } from './order-list-query';

const DAY = 86_400;
const D = 20_513 * DAY; // 2026-03-01T00:00:00Z

describe('splitWindow (UTC days of order_day_counts)', () => {
  it('counts whole days by counters and the partial days at the edges exactly', () => {
    expect(splitWindow(D - 10, D + 3 * DAY + 5)).toEqual({
      days: { first: 20_513, end: 20_516 },
      partial: [
        { from: D + 3 * DAY, to: D + 3 * DAY + 5 },
        { from: D - 10, to: D },
      ],
    });
  });

  it('needs no partial day when the bounds are midnights', () => {
    expect(splitWindow(D, D + 2 * DAY)).toEqual({ days: { first: 20_513, end: 20_515 }, partial: [] });
  });

  it('takes a bound one second after a midnight as a partial day, not the whole day', () => {
    expect(splitWindow(D + 1, D + 2 * DAY - 1)).toEqual({ days: null, partial: [{ from: D + 1, to: D + 2 * DAY - 1 }] });
    expect(splitWindow(D + 1, D + 3 * DAY - 1)).toEqual({
      days: { first: 20_514, end: 20_515 },
      partial: [
        { from: D + 2 * DAY, to: D + 3 * DAY - 1 },
        { from: D + 1, to: D + DAY },
      ],
    });
  });

  it('keeps a window within one day, or across one midnight, as one exact range', () => {
    expect(splitWindow(D + 100, D + 200)).toEqual({ days: null, partial: [{ from: D + 100, to: D + 200 }] });
    expect(splitWindow(D - 100, D + 100)).toEqual({ days: null, partial: [{ from: D - 100, to: D + 100 }] });
    expect(splitWindow(D, D + 1)).toEqual({ days: null, partial: [{ from: D, to: D + 1 }] });
  });

  it('leaves an open side to the counters', () => {
    expect(splitWindow(D + 5, undefined)).toEqual({ days: { first: 20_514, end: undefined }, partial: [{ from: D + 5, to: D + DAY }] });
    expect(splitWindow(undefined, D + 5)).toEqual({ days: { first: undefined, end: 20_513 }, partial: [{ from: D, to: D + 5 }] });
    expect(splitWindow(undefined, undefined)).toEqual({ days: { first: undefined, end: undefined }, partial: [] });
  });
});
