import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { Body, Controller, HttpCode, Get, Param, Post, Query, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DomainError, ErrorCode, type FieldError, apiMessage } from '@app/common';
import { ORDER_EVENT_TYPES, ORDER_STATUSES } from '@app/db';
import { CallbacksService } from '../callbacks/callbacks.service';
import { PortalExceptionFilter } from './portal-exception.filter';
import { PortalOrdersService } from './portal-orders.service';
import { PortalPageGuard } from './portal-page.guard';
import { CurrentSession, PortalT, formText } from './portal-request';
import { PortalAuthService } from './portal-auth.service';
import type { MessageKey } from './i18n/en';
import type { Translate } from './i18n/i18n';
import type { PortalSession } from './portal-sessions';
import { formatShanghai } from './shanghai-time';

const NOTICES = ['resent', 'resendPending', 'resendNoEvent', 'rateLimited'] as const;

/** What the Refund form says when refundCreate refuses, by the refusal's code (and field, for 40000). */
function refundRefusal(err: DomainError): MessageKey {
  if (err.code === ErrorCode.BadRequest) {
    if (err.says('refund_amount.exceeds')) return 'refundForm.tooMuch';
    return ((err.data?.errors ?? []) as FieldError[]).some((e) => e.field === 'reason') ? 'refundForm.badReason' : 'refundForm.badAmount';
  }
  if (err.code === ErrorCode.InsufficientBalance) return 'refundForm.balance';
  if (err.code === ErrorCode.IdempotencyConflict) return 'refundForm.resubmitted';
  if (err.code === ErrorCode.ChannelUnavailable || err.code === ErrorCode.PayMethodUnavailable) return 'refundForm.channel';
  if (err.code === ErrorCode.StateConflict) return err.says('refund.processing') ? 'refundForm.processing' : 'refundForm.state';
  throw err;
}

/** A merchant_refund_no for one rendering of the Refund form: the same form sent twice is one refund. */
const formRefundNo = (): string => `portal-${randomBytes(12).toString('base64url')}`;

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
    private readonly auth: PortalAuthService,
  ) {}

  @Get()
  async list(@CurrentSession() session: PortalSession, @Query() query: Record<string, unknown>, @Res() reply: FastifyReply): Promise<void> {
    const filters = await this.orders.filters(query);
    const common = { form: filters.form, statuses: ORDER_STATUSES, exportQuery: new URLSearchParams({ ...filters.form }).toString() };
    if (!filters.ok) return void reply.status(400).view('orders', { ...common, badFields: filters.fields, result: null });
    const result = await this.orders.list(session.merchantId, filters);
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
  async exportCsv(
    @CurrentSession() session: PortalSession,
    @Query() query: Record<string, unknown>,
    @PortalT() t: Translate,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const filters = await this.orders.filters(query);
    if (!filters.ok) throw DomainError.invalid('filters', apiMessage('field.notValid'));
    const stamp = formatShanghai(new Date()).replace(/[-: ]/g, '');
    return void reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="orders-${stamp}.csv"`)
      .send(Readable.from(this.orders.csv(session.merchantId, filters, t)));
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
    // After a refund: the refund the redirect names, if it is one of this order's.
    const refunded = detail.refunds?.list.find((r) => r.refundNo === query.refunded) ?? null;
    return void reply.view('order', { ...detail, notice, noticeEvent: event, refunded, refundForm: { merchantRefundNo: formRefundNo() } });
  }

  /**
   * The Refund button (SPEC 8a): the password again, then refundCreate's own rules. A wrong
   * password changes nothing; each refusal is said on the order's page with the amount typed.
   */
  @Post(':orderNo/refund')
  @HttpCode(200)
  async refund(@CurrentSession() session: PortalSession, @Param('orderNo') orderNo: string, @Body() form: unknown, @Res() reply: FastifyReply): Promise<void> {
    const order = await this.orders.find(session.merchantId, orderNo);
    const input = {
      amount: formText(form, 'refund_amount').trim(),
      reason: formText(form, 'reason').trim(),
      merchantRefundNo: formText(form, 'merchant_refund_no'),
    };
    const refuse = async (status: number, error: MessageKey): Promise<void> =>
      void reply.status(status).view('order', {
        ...(await this.orders.detail(session.merchantId, order.orderNo)),
        notice: null,
        noticeEvent: '',
        refunded: null,
        refundForm: { merchantRefundNo: input.merchantRefundNo || formRefundNo(), amount: input.amount, reason: input.reason, error },
      });
    const confirmed = await this.auth.confirmPassword(session.userId, formText(form, 'password'));
    if (confirmed !== 'ok') return confirmed === 'locked' ? refuse(429, 'login.locked') : refuse(400, 'reauth.wrong');
    try {
      const refund = await this.orders.refund(session.merchantId, order.orderNo, input);
      return void reply.redirect(`/portal/orders/${order.orderNo}?refunded=${refund.refund_no}#refunds-title`, 303);
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      const error = refundRefusal(err);
      return refuse(error === 'refundForm.badAmount' || error === 'refundForm.badReason' || error === 'refundForm.tooMuch' ? 400 : 409, error);
    }
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
