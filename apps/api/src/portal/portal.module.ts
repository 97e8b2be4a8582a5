import { Module } from '@nestjs/common';
import { OperatorModule } from '@app/operator';
import { OrdersCoreModule } from '@app/orders';
import { CallbacksModule } from '../callbacks/callbacks.module';
import { OrdersModule } from '../orders/orders.module';
import { AccountController } from './account.controller';
import { DevelopersController } from './developers.controller';
import { DevelopersService } from './developers.service';
import { HelpController } from './help.controller';
import { OrderListController, PortalApiSessionGuard } from './order-list.controller';
import { OverviewController } from './overview.controller';
import { OverviewService } from './overview.service';
import { PortalAuthService } from './portal-auth.service';
import { PortalChannelsService } from './portal-channels.service';
import { PortalLedgerService } from './portal-ledger.service';
import { PortalOrdersController } from './portal-orders.controller';
import { PortalOrdersService } from './portal-orders.service';
import { PortalPageGuard } from './portal-page.guard';
import { PortalSessions } from './portal-sessions';
import { SignInController } from './sign-in.controller';
import { PortalStatementsController } from './statements.controller';
import { StatementsModule } from '../statements/statements.module';
import { RefundsModule } from '../refunds/refunds.module';

/** The session store both the pages and orderList read. */
@Module({ providers: [PortalSessions], exports: [PortalSessions] })
export class PortalSessionsModule {}

/** The merchant portal's pages under /portal (SPEC 8a). */
@Module({
  imports: [PortalSessionsModule, OrdersModule, OrdersCoreModule, CallbacksModule, OperatorModule.forFeature(), StatementsModule, RefundsModule],
  controllers: [
    SignInController,
    OverviewController,
    PortalOrdersController,
    DevelopersController,
    AccountController,
    PortalStatementsController,
    HelpController,
  ],
  providers: [PortalPageGuard, PortalAuthService, OverviewService, PortalOrdersService, PortalChannelsService, PortalLedgerService, DevelopersService],
})
export class PortalModule {}

/** `POST {base_url}/merchant/orderList`, mounted under the API prefix with the other merchant operations. */
@Module({
  imports: [PortalSessionsModule, OrdersModule],
  controllers: [OrderListController],
  providers: [PortalApiSessionGuard],
})
export class PortalApiModule {}
