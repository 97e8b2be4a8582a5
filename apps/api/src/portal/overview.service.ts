import { Injectable } from '@nestjs/common';
import { type LedgerLine, LedgerRepository, OrderRepository } from '@app/db';
import { OVERVIEW_LEDGER_LINES } from './portal-ledger.service';
import { lastShanghaiDays } from './shanghai-time';

export const CHART_DAYS = 14;

export interface DayTotal {
  day: string;
  count: number;
  cnyFen: number;
}

export interface ChartBar extends DayTotal {
  /** MM-DD under the bar, on every other day so labels stay readable on a phone. */
  label: string;
  x: number;
  y: number;
  height: number;
}

export interface Overview {
  availableFen: number;
  depositFen: number;
  today: DayTotal;
  days: DayTotal[];
  totalCount: number;
  totalFen: number;
  /** The latest movements of the balances, newest first. */
  movements: LedgerLine[];
  chart: { width: number; height: number; plotTop: number; baseline: number; barWidth: number; maxFen: number; bars: ChartBar[] };
}

const CHART = { width: 560, height: 230, plotTop: 28, baseline: 196, slot: 38, barWidth: 24, left: 14 };

/** The bars of the 14-day chart; heights are drawing units (the amounts themselves stay integer fen). */
export function chartBars(days: DayTotal[]): Overview['chart'] {
  const maxFen = Math.max(0, ...days.map((d) => d.cnyFen));
  const plotHeight = CHART.baseline - CHART.plotTop;
  const bars = days.map((d, i) => {
    const height = maxFen === 0 || d.cnyFen === 0 ? 0 : Math.max(2, Math.round((d.cnyFen / maxFen) * plotHeight));
    const fromEnd = days.length - 1 - i;
    return {
      ...d,
      label: fromEnd % 2 === 0 ? d.day.slice(5) : '',
      x: CHART.left + i * CHART.slot + (CHART.slot - CHART.barWidth) / 2,
      y: CHART.baseline - height,
      height,
    };
  });
  return { width: CHART.width, height: CHART.height, plotTop: CHART.plotTop, baseline: CHART.baseline, barWidth: CHART.barWidth, maxFen, bars };
}

/** Balances, their latest movements and the last 14 days of paid orders (Asia/Shanghai days), with today's apart. */
@Injectable()
export class OverviewService {
  constructor(
    private readonly ledger: LedgerRepository,
    private readonly orders: OrderRepository,
  ) {}

  async overview(merchantId: number, now = new Date()): Promise<Overview> {
    const { days, since } = lastShanghaiDays(CHART_DAYS, now);
    const [balance, paid, movements] = await Promise.all([
      this.ledger.balanceOf(merchantId),
      this.orders.paidByDay(merchantId, since),
      this.ledger.movements(merchantId, OVERVIEW_LEDGER_LINES),
    ]);
    const byDay = new Map(paid.map((p) => [p.day, p]));
    const totals = days.map((day) => ({ day, count: byDay.get(day)?.count ?? 0, cnyFen: byDay.get(day)?.cnyFen ?? 0 }));
    return {
      availableFen: balance.availableFen,
      depositFen: balance.depositFen,
      today: totals[totals.length - 1],
      days: totals,
      totalCount: totals.reduce((n, d) => n + d.count, 0),
      totalFen: totals.reduce((n, d) => n + d.cnyFen, 0),
      movements,
      chart: chartBars(totals),
    };
  }
}
