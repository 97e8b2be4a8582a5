import { Controller, Get, Query, Render, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { OverviewService } from './overview.service';
import { PortalExceptionFilter } from './portal-exception.filter';
import { PortalPageGuard } from './portal-page.guard';
import { CurrentSession } from './portal-request';
import type { PortalSession } from './portal-sessions';
import { PortalChannelsService } from './portal-channels.service';
import { PortalLedgerService, ledgerCursor } from './portal-ledger.service';

/** The overview, the ledger and the channels pages. */
// HTML for people, not API: kept out of the OpenAPI document.
@ApiExcludeController()
@Controller('portal')
@UseGuards(PortalPageGuard)
@UseFilters(PortalExceptionFilter)
export class OverviewController {
  constructor(
    private readonly overviews: OverviewService,
    private readonly channels: PortalChannelsService,
    private readonly ledger: PortalLedgerService,
  ) {}

  @Get()
  @Render('overview')
  async overview(@CurrentSession() session: PortalSession): Promise<object> {
    return { overview: await this.overviews.overview(session.merchantId) };
  }

  /** Every movement of the balances, newest first; `before` is the last entry of the previous page. */
  @Get('ledger')
  async ledgerPage(@CurrentSession() session: PortalSession, @Query('before') before: unknown, @Res() reply: FastifyReply): Promise<void> {
    const cursor = ledgerCursor(before);
    if (cursor === undefined) return void reply.status(400).view('ledger', { page: null, first: true, error: 'ledger.badCursor' });
    const page = await this.ledger.page(session.merchantId, cursor);
    return void reply.view('ledger', { page, first: cursor === null, error: null });
  }

  @Get('channels')
  @Render('channels')
  async channelList(@CurrentSession() session: PortalSession): Promise<object> {
    return { channels: await this.channels.list(session.merchantId, session.merchantMode) };
  }
}
