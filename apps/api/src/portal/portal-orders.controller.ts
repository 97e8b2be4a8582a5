import { Readable } from 'node:stream';
import { Controller, HttpCode, Get, Param, Post, Query, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DomainError, ErrorCode, apiMessage } from '@app/common';
import { ORDER_EVENT_TYPES, ORDER_STATUSES } from '@app/db';
import { CallbacksService } from '../callbacks/callbacks.service';
import { PortalExceptionFilter } from './portal-exception.filter';
import { PortalOrdersService } from './portal-orders.service';
import { PortalPageGuard } from './portal-page.guard';
import { CurrentSession } from './portal-request';
import type { PortalSession } from './portal-sessions';
import { formatShanghai } from './shanghai-time';

const NOTICES = ['resent', 'resendPending', 'resendNoEvent', 'rateLimited'] as const;

/** The orders list (orderQueryList's filters, paging, CSV export) and one order's page with its callbacks. */
// HTML for people, not API: kept out of the OpenAPI document.
@ApiExcludeController()
@Controller('portal/orders')
@UseGuards(PortalPageGuard)
@UseFilters(PortalExceptionFilter)
export class PortalOrdersController {
  constructor(
    private readonly orders: PortalOrdersService,
    private readonly callbacks: CallbacksService,
  ) {}

  @Get()
  async list(@CurrentSession() session: PortalSession, @Query() query: Record<string, unknown>, @Res() reply: FastifyReply): Promise<void> {
    const filters = await this.orders.filters(query);
    const common = { form: filters.form, statuses: ORDER_STATUSES, exportQuery: new URLSearchParams({ ...filters.form }).toString() };
    if (!filters.ok) return void reply.status(400).view('orders', { ...common, badFields: filters.fields, result: null });
    const result = await this.orders.list(session.merchantId, filters.params);
    const pages = Math.max(1, Math.ceil(result.total / result.limit));
    const pageLink = (page: number): string => `/portal/orders?${new URLSearchParams({ ...filters.form, page: String(page) }).toString()}`;
    return void reply.view('orders', {
      ...common,
      badFields: [],
      result,
      pages,
      prev: result.page > 1 ? pageLink(Math.min(result.page - 1, pages)) : null,
      next: result.page < pages ? pageLink(result.page + 1) : null,
    });
  }

  @Get('export.csv')
  async exportCsv(@CurrentSession() session: PortalSession, @Query() query: Record<string, unknown>, @Res() reply: FastifyReply): Promise<void> {
    const filters = await this.orders.filters(query);
    if (!filters.ok) throw DomainError.invalid('filters', apiMessage('field.notValid'));
    const stamp = formatShanghai(new Date()).replace(/[-: ]/g, '');
    return void reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="orders-${stamp}.csv"`)
      .send(Readable.from(this.orders.csv(session.merchantId, filters.params)));
  }

  @Get(':orderNo')
  async detail(
    @CurrentSession() session: PortalSession,
    @Param('orderNo') orderNo: string,
    @Query() query: Record<string, unknown>,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const detail = await this.orders.detail(session.merchantId, orderNo);
    const notice = NOTICES.find((n) => n === query.notice) ?? null;
    const event = ORDER_EVENT_TYPES.find((e) => e === query.event) ?? '';
    return void reply.view('order', { ...detail, notice, noticeEvent: event });
  }

  /** The same service as the signed callbackResend operation. */
  @Post(':orderNo/resend')
  @HttpCode(200)
  async resend(@CurrentSession() session: PortalSession, @Param('orderNo') orderNo: string, @Res() reply: FastifyReply): Promise<void> {
    const order = await this.orders.find(session.merchantId, orderNo);
    const back = `/portal/orders/${order.orderNo}`;
    try {
      const { view, queued } = await this.callbacks.resend(session.merchantId, order.orderNo);
      return void reply.redirect(`${back}?notice=${queued ? 'resent' : 'resendPending'}&event=${encodeURIComponent(view.event)}`, 303);
    } catch (err) {
      if (err instanceof DomainError && err.code === ErrorCode.OrderNotFound) return void reply.redirect(`${back}?notice=resendNoEvent`, 303);
      if (err instanceof DomainError && err.code === ErrorCode.RateLimited) return void reply.redirect(`${back}?notice=rateLimited`, 303);
      throw err;
    }
  }
}
