import { type CanActivate, Controller, type ExecutionContext, HttpCode, Injectable, Post, UseGuards, createParamDecorator } from '@nestjs/common';
import { ApiCookieAuth, ApiExtraModels, ApiOperation, ApiTags, ApiBody, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DomainError, type Envelope, ErrorCode, ok, apiMessage } from '@app/common';
import { ApiEnvelopeOk, ApiErrorAnswers, REQUEST_ERRORS } from '../http/api-docs';
import { MerchantParams } from '../auth/merchant-auth.guard';
import { mergeRequestParams } from '../http/request-params';
import { OrderQueryListDto } from '../orders/dto/order-query-list.dto';
import { OrderListDoc } from '../orders/dto/order-views.doc';
import { type OrderView, OrdersService } from '../orders/orders.service';
import type { PortalRequest } from './portal-request';
import { SESSION_COOKIE, PortalSessions } from './portal-sessions';

/**
 * SPEC 8a orderList: the portal session instead of a signature. No session, an expired one or
 * a disabled user is 40100; a disabled merchant 40300, as for signed requests.
 */
@Injectable()
export class PortalApiSessionGuard implements CanActivate {
  constructor(private readonly sessions: PortalSessions) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<PortalRequest & { merchantParams: Record<string, unknown> }>();
    const session = await this.sessions.resolve(request, context.switchToHttp().getResponse<FastifyReply>());
    if (!session) throw new DomainError(ErrorCode.AuthMissing, apiMessage('auth.portalSignIn'));
    if (session.merchantStatus !== 'active') throw new DomainError(ErrorCode.MerchantDisabled);
    request.portalSession = session;
    // The same parameter map and DTO validation as the signed operations (MerchantParams).
    request.merchantParams = mergeRequestParams(request);
    return true;
  }
}

/** The merchant of the session PortalApiSessionGuard accepted. */
export const SessionMerchantId = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): number => ctx.switchToHttp().getRequest<PortalRequest>().portalSession!.merchantId,
);

@Controller('merchant')
@UseGuards(PortalApiSessionGuard)
export class OrderListController {
  constructor(private readonly orders: OrdersService) {}

  @Post('orderList')
  @ApiTags('merchant')
  @ApiCookieAuth(SESSION_COOKIE)
  @ApiExtraModels(OrderQueryListDto)
  @ApiOperation({
    summary: "List the merchant's orders, authenticated by the portal session cookie",
    description:
      'Same filters and same `data` as orderQueryList, without api_key, timestamp, nonce or signature: the `portal_session` cookie a portal sign-in sets stands in for them. No session, or an expired one: 40100.',
  })
  @ApiBody({ schema: { $ref: getSchemaPath(OrderQueryListDto) } })
  @ApiEnvelopeOk(OrderListDoc)
  @ApiErrorAnswers(...REQUEST_ERRORS, ErrorCode.AuthMissing, ErrorCode.MerchantDisabled)
  @HttpCode(200)
  async orderList(
    @SessionMerchantId() merchantId: number,
    @MerchantParams() params: OrderQueryListDto,
  ): Promise<Envelope<{ list: OrderView[]; total: number; page: number; limit: number }>> {
    return ok(await this.orders.list(merchantId, params));
  }
}
