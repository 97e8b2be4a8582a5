import { Balance } from './balance.entity';
import { CallbackAttempt } from './callback-attempt.entity';
import { CallbackDelivery } from './callback-delivery.entity';
import { CallbackDeliveryCount } from './callback-delivery-count.entity';
import { Channel } from './channel.entity';
import { LedgerEntry } from './ledger-entry.entity';
import { MerchantChannel } from './merchant-channel.entity';
import { MerchantUserInvitation } from './merchant-user-invitation.entity';
import { Merchant } from './merchant.entity';
import { Nonce } from './nonce.entity';
import { OrderEvent } from './order-event.entity';
import { Order } from './order.entity';
import { OrderPrepay } from './order-prepay.entity';
import { Payout } from './payout.entity';
import { PortalSession } from './portal-session.entity';
import { PortalUser } from './portal-user.entity';
import { Refund } from './refund.entity';
import { SignInFailure, SignInLock } from './sign-in-throttle.entity';
import { MasterKeyCheck } from './master-key-check.entity';
import { CallbackCircuit } from './callback-circuit.entity';
import { CallbackToolAllowance } from './callback-tool-allowance.entity';
import { OrderCount } from './order-count.entity';
import { OrderDayCount } from './order-day-count.entity';
import { ReconLine } from './recon-line.entity';
import { ReconRun } from './recon-run.entity';
import { SandboxBillLine } from './sandbox-bill-line.entity';
import { QueueBackendRecord } from './queue-backend.entity';
import { LedgerDayBalance } from './ledger-day-balance.entity';
import { OperatorAction } from './operator-action.entity';

export * from './balance.entity';
export * from './callback-attempt.entity';
export * from './callback-delivery.entity';
export * from './callback-delivery-count.entity';
export * from './channel.entity';
export * from './ledger-entry.entity';
export * from './merchant-channel.entity';
export * from './merchant-user-invitation.entity';
export * from './merchant.entity';
export * from './nonce.entity';
export * from './order-event.entity';
export * from './order.entity';
export * from './order-prepay.entity';
export * from './payout.entity';
export * from './portal-session.entity';
export * from './portal-user.entity';
export * from './refund.entity';
export * from './sign-in-throttle.entity';
export * from './master-key-check.entity';
export * from './callback-circuit.entity';
export * from './callback-tool-allowance.entity';
export * from './order-count.entity';
export * from './order-day-count.entity';
export * from './recon-line.entity';
export * from './recon-run.entity';
export * from './sandbox-bill-line.entity';
export * from './queue-backend.entity';
export * from './ledger-day-balance.entity';
export * from './operator-action.entity';

export const ENTITIES = [
  Merchant,
  Channel,
  MerchantChannel,
  Order,
  OrderPrepay,
  Balance,
  LedgerEntry,
  OrderEvent,
  CallbackDelivery,
  CallbackDeliveryCount,
  CallbackAttempt,
  Nonce,
  Refund,
  Payout,
  PortalUser,
  MerchantUserInvitation,
  PortalSession,
  SignInFailure,
  SignInLock,
  MasterKeyCheck,
  CallbackToolAllowance,
  CallbackCircuit,
  OrderCount,
  OrderDayCount,
  ReconRun,
  ReconLine,
  SandboxBillLine,
  QueueBackendRecord,
  LedgerDayBalance,
  OperatorAction,
];
