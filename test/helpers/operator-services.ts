import type { INestApplicationContext } from '@nestjs/common';
import { CallbackOperationsService, ChannelSetupService, MerchantAccountService, MerchantLedgerService, PortalAccessService } from '@app/operator';

/** The operator's services a spec sets its fixtures up with, taken from one OperatorModule context. */
export interface OperatorServices {
  merchants: MerchantAccountService;
  ledger: MerchantLedgerService;
  channels: ChannelSetupService;
  portalUsers: PortalAccessService;
  callbacks: CallbackOperationsService;
}

export function operatorServices(ctx: INestApplicationContext): OperatorServices {
  return {
    merchants: ctx.get(MerchantAccountService),
    ledger: ctx.get(MerchantLedgerService),
    channels: ctx.get(ChannelSetupService),
    portalUsers: ctx.get(PortalAccessService),
    callbacks: ctx.get(CallbackOperationsService),
  };
}
