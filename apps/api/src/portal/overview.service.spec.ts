import { chartBars } from './overview.service';

describe('the overview chart', () => {
  const days = (fens: number[]) => fens.map((cnyFen, i) => ({ day: `2025-11-${String(i + 1).padStart(2, '0')}`, count: cnyFen ? 1 : 0, cnyFen }));

  it('scales bars to the highest day, keeps a small day visible and an empty day flat', () => {
    const chart = chartBars(days([0, 1, 50_000, 100_000]));
    const plot = chart.baseline - chart.plotTop;
    expect(chart.maxFen).toBe(100_000);
    expect(chart.bars.map((b) => b.height)).toEqual([0, 2, plot / 2, plot]);
    for (const b of chart.bars) expect(b.y + b.height).toBe(chart.baseline);
  });

  it('draws nothing above the baseline when no order was paid', () => {
    expect(chartBars(days(new Array(14).fill(0))).bars.every((b) => b.height === 0)).toBe(true);
  });
});
