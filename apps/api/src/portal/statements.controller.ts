import { Controller, Get, Query, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DomainError, apiMessage, formatYuan } from '@app/common';
import { shanghaiDate, shanghaiDayBounds } from '@app/recon';
import type { Translate } from './i18n/i18n';
import { StatementsService, type Statement } from '../statements/statements.service';
import { PortalExceptionFilter } from './portal-exception.filter';
import { PortalPageGuard } from './portal-page.guard';
import { CurrentSession, PortalT } from './portal-request';
import type { PortalSession } from './portal-sessions';
import { formatShanghai } from './shanghai-time';

/** The day asked for (today in Asia/Shanghai when none), or null for anything that is not a day. */
function statementDate(value: unknown): string | null {
  if (value === undefined || value === '') return shanghaiDate(new Date());
  return typeof value === 'string' && shanghaiDayBounds(value) ? value : null;
}

function nextDay(date: string, days: number): string {
  return shanghaiDate(new Date(shanghaiDayBounds(date)!.from.getTime() + days * 86_400_000));
}

function csvCell(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/**
 * The statement as CSV for a spreadsheet: UTF-8 with a BOM (so Excel opens it as Chinese, not
 * as mojibake), headers and kinds in the page's language, the opening and closing balances as
 * their own rows, amounts in yuan.
 */
export function statementCsv(s: Statement, t: Translate): string {
  const row = (cells: string[]): string => `${cells.map(csvCell).join(',')}\r\n`;
  const header = ['time', 'entry', 'orderNo', 'merchantOrderNo', 'refundNo', 'account', 'amount', 'availableAfter', 'depositAfter'].map((k) =>
    t(`statements.csv.${k}` as never),
  );
  let text = `\uFEFF${row(header)}`;
  text += row(['', t('statements.opening'), '', '', '', '', '', formatYuan(s.opening.available), formatYuan(s.opening.deposit)]);
  for (const m of s.movements) {
    text += row([
      formatShanghai(m.createdAt),
      t(`ledger.kind.${m.kind}` as never),
      m.orderNo,
      m.merchantOrderNo ?? '',
      m.refundNo ?? '',
      t(`statements.account.${m.account}` as never),
      formatYuan(m.amountFen),
      formatYuan(m.availableAfterFen),
      formatYuan(m.depositAfterFen),
    ]);
  }
  text += row(['', t('statements.closing'), '', '', '', '', '', formatYuan(s.closing.available), formatYuan(s.closing.deposit)]);
  return text;
}

/** `/portal/statements`: the merchant's statement of a day (statementQuery's), and its CSV. */
@ApiExcludeController()
@Controller('portal/statements')
@UseGuards(PortalPageGuard)
@UseFilters(PortalExceptionFilter)
export class PortalStatementsController {
  constructor(private readonly statements: StatementsService) {}

  @Get()
  async page(@CurrentSession() session: PortalSession, @Query('date') date: unknown, @Res() reply: FastifyReply): Promise<void> {
    const day = statementDate(date);
    if (!day) return void reply.status(400).view('statements', { statement: null, date: shanghaiDate(new Date()), error: 'statements.badDate' });
    const statement = await this.statements.statement(session.merchantId, day);
    // SPEC 6: a day after today (Asia/Shanghai) is refused, so the link to the next day stops at today.
    const next = nextDay(day, 1);
    return void reply.view('statements', { statement, date: day, prev: nextDay(day, -1), next: next <= shanghaiDate(new Date()) ? next : null, error: null });
  }

  @Get('export.csv')
  async exportCsv(@CurrentSession() session: PortalSession, @Query('date') date: unknown, @PortalT() t: Translate, @Res() reply: FastifyReply): Promise<void> {
    const day = statementDate(date);
    if (!day) throw DomainError.invalid('date', apiMessage('field.date', { field: 'date' }));
    const statement = await this.statements.statement(session.merchantId, day);
    return void reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="statement-${day}.csv"`)
      .send(statementCsv(statement, t));
  }
}
