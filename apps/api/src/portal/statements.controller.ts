import { Readable } from 'node:stream';
import { Controller, Get, Query, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DomainError, apiMessage, formatYuan } from '@app/common';
import { shanghaiDate, shanghaiDayBounds } from '@app/recon';
import type { Translate } from './i18n/i18n';
import { StatementsService, type Statement, type StatementMovement } from '../statements/statements.service';
import { PortalExceptionFilter } from './portal-exception.filter';
import { PortalPageGuard } from './portal-page.guard';
import { CurrentSession, PortalT } from './portal-request';
import type { PortalSession } from './portal-sessions';
import { formatShanghai } from './shanghai-time';
import { csvRow, spreadsheetText } from './spreadsheet-csv';

/** Movements per page of the portal's statement. */
export const STATEMENT_PAGE_SIZE = 100;

/** The day asked for (today in Asia/Shanghai when none), or null for anything that is not a day. */
function statementDate(value: unknown): string | null {
  if (value === undefined || value === '') return shanghaiDate(new Date());
  return typeof value === 'string' && shanghaiDayBounds(value) ? value : null;
}

/** The page asked for (1 when none), or null for anything that is not a page number. */
function pageNumber(value: unknown): number | null {
  if (value === undefined || value === '') return 1;
  return typeof value === 'string' && /^[1-9]\d{0,5}$/.test(value) ? Number(value) : null;
}

function nextDay(date: string, days: number): string {
  return shanghaiDate(new Date(shanghaiDayBounds(date)!.from.getTime() + days * 86_400_000));
}

/** The column headers, in the page's language, each amount with its unit (yuan). */
function csvHeader(t: Translate): string {
  return csvRow(
    ['time', 'entry', 'orderNo', 'merchantOrderNo', 'refundNo', 'account', 'amount', 'availableAfter', 'depositAfter'].map((k) =>
      t(`statements.csv.${k}` as never),
    ),
  );
}

function balanceRow(label: string, balances: Statement['opening']): string {
  return csvRow(['', label, '', '', '', '', '', formatYuan(balances.available), formatYuan(balances.deposit)]);
}

function movementRow(m: StatementMovement, t: Translate): string {
  return csvRow([
    formatShanghai(m.createdAt),
    t(`ledger.kind.${m.kind}` as never),
    spreadsheetText(m.orderNo),
    m.merchantOrderNo === null ? '' : spreadsheetText(m.merchantOrderNo),
    m.refundNo === null ? '' : spreadsheetText(m.refundNo),
    t(`statements.account.${m.account}` as never),
    formatYuan(m.amountFen),
    formatYuan(m.availableAfterFen),
    formatYuan(m.depositAfterFen),
  ]);
}

/**
 * The day's statement as CSV for a spreadsheet (SPEC 6): UTF-8 with a BOM (so Excel opens it as
 * Chinese, not as mojibake), headers and kinds in the page's language, amounts in yuan said in
 * the headers, order and refund numbers as text (never 2.02611E+21), merchant_order_no a column,
 * the opening and closing balances as their own rows. Written as the movements are read, a batch
 * at a time: the day's size never sits in memory.
 */
export async function* statementCsv(parts: ReturnType<StatementsService['export']>, t: Translate): AsyncGenerator<string> {
  yield `\uFEFF${csvHeader(t)}`;
  let closing: Statement['closing'] | null = null;
  for await (const part of parts) {
    if ('figures' in part) {
      closing = part.figures.closing;
      yield balanceRow(t('statements.opening'), part.figures.opening);
    } else {
      yield part.movements.map((m) => movementRow(m, t)).join('');
    }
  }
  if (closing) yield balanceRow(t('statements.closing'), closing);
}

/** `/portal/statements`: the merchant's statement of a day (statementQuery's), paged, and its CSV. */
@ApiExcludeController()
@Controller('portal/statements')
@UseGuards(PortalPageGuard)
@UseFilters(PortalExceptionFilter)
export class PortalStatementsController {
  constructor(private readonly statements: StatementsService) {}

  @Get()
  async page(@CurrentSession() session: PortalSession, @Query('date') date: unknown, @Query('page') page: unknown, @Res() reply: FastifyReply): Promise<void> {
    const today = shanghaiDate(new Date());
    const day = statementDate(date);
    const pageNo = pageNumber(page);
    if (!day || pageNo === null || day > today) {
      const error = !day || pageNo === null ? 'statements.badDate' : 'statements.future';
      return void reply.status(400).view('statements', { statement: null, date: today, error });
    }
    const statement = await this.statements.statement(session.merchantId, day, pageNo, STATEMENT_PAGE_SIZE);
    const pages = Math.max(1, Math.ceil(statement.total / STATEMENT_PAGE_SIZE));
    const at = (n: number): string => `/portal/statements?date=${day}&page=${n}`;
    return void reply.view('statements', {
      statement,
      date: day,
      prev: nextDay(day, -1),
      next: day < today ? nextDay(day, 1) : null,
      pages,
      prevPage: pageNo > 1 ? at(Math.min(pageNo - 1, pages)) : null,
      nextPage: pageNo < pages ? at(pageNo + 1) : null,
      error: null,
    });
  }

  @Get('export.csv')
  async exportCsv(@CurrentSession() session: PortalSession, @Query('date') date: unknown, @PortalT() t: Translate, @Res() reply: FastifyReply): Promise<void> {
    const day = statementDate(date);
    if (!day) throw DomainError.invalid('date', apiMessage('field.date', { field: 'date' }));
    const parts = this.statements.export(session.merchantId, day);
    // The first part (the day's balances) before any byte is sent: a refused day is an error page, not half a file.
    const first = await parts.next();
    const replay = (async function* () {
      if (!first.done) yield first.value;
      yield* parts;
    })();
    return void reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="statement-${day}.csv"`)
      .send(Readable.from(statementCsv(replay, t)));
  }
}
