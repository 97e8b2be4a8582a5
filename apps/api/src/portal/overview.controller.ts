import { Controller, Get, Render, UseFilters, UseGuards } from '@nestjs/common';
import { OverviewService } from './overview.service';
import { PortalExceptionFilter } from './portal-exception.filter';
import { PortalPageGuard } from './portal-page.guard';
import { CurrentSession } from './portal-request';
import type { PortalSession } from './portal-sessions';
import { PortalChannelsService } from './portal-channels.service';

/** The overview and the channels pages. */
@Controller('portal')
@UseGuards(PortalPageGuard)
@UseFilters(PortalExceptionFilter)
export class OverviewController {
  constructor(
    private readonly overviews: OverviewService,
    private readonly channels: PortalChannelsService,
  ) {}

  @Get()
  @Render('overview')
  async overview(@CurrentSession() session: PortalSession): Promise<object> {
    return { overview: await this.overviews.overview(session.merchantId) };
  }

  @Get('channels')
  @Render('channels')
  async channelList(@CurrentSession() session: PortalSession): Promise<object> {
    return { channels: await this.channels.list(session.merchantId, session.merchantMode) };
  }
}
