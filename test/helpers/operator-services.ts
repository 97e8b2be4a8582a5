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

/** The multi-process specs' one channel: a sandbox processor signing with `secretKey`, linked to each merchant given. */
export async function linkedSandboxChannel(operator: OperatorServices, secretKey: string, merchantIds: number[]): Promise<number> {
  const { id } = await operator.channels.create({
    category: 'processor',
    name: 'sandbox',
    payMethod: 'alipay',
    adapter: 'sandbox',
    rate: '0.006',
    config: JSON.stringify({ secret_key: secretKey }),
  });
  for (const merchantId of merchantIds) await operator.channels.link(merchantId, id);
  return id;
}
