import type { MigrationInterface } from 'typeorm';
import { InitialSchema1763700000000 } from './1763700000000-initial-schema';
import { OrderCounts1763800000000 } from './1763800000000-order-counts';
import { OrderDayCounts1763900000000 } from './1763900000000-order-day-counts';
import { AmountMismatchEvent1764000000000 } from './1764000000000-amount-mismatch-event';
import { MerchantMode1764000100000 } from './1764000100000-merchant-mode';
import { DeliveryOrigin1764000200000 } from './1764000200000-delivery-origin';
import { PortalUsers1764100000000 } from './1764100000000-portal-users';
import { MerchantChangedNotify1764150000000 } from './1764150000000-merchant-changed-notify';
import { MoneyOut1764200000000 } from './1764200000000-money-out';
import { SecretGraceAndCallbackTools1764290000000 } from './1764290000000-secret-grace-and-callback-tools';
import { CallbackDispatch1764300000000 } from './1764300000000-callback-dispatch';
import { CallbackJobs1764400000000 } from './1764400000000-callback-jobs';
import { OrderCountSlots1764410000000 } from './1764410000000-order-count-slots';
import { LostNotificationQueries1764420000000 } from './1764420000000-lost-notification-queries';
import { ChannelMode1764420100000 } from './1764420100000-channel-mode';
import { Reconciliation1764430000000 } from './1764430000000-reconciliation';
import { LeaseTokens1764440000000 } from './1764440000000-lease-tokens';
import { MasterKeyCheck1764460000000 } from './1764460000000-master-key-check';
import { RetentionIndexes1764480000000 } from './1764480000000-retention-indexes';
import { ChannelLinkChangedNotify1764491100000 } from './1764491100000-channel-link-changed-notify';
import { DeliveryStatusCounts1764500000000 } from './1764500000000-delivery-status-counts';
import { SettlementFunctions1764523000000 } from './1764523000000-settlement-functions';
import { CircuitOpened1764530000000 } from './1764530000000-circuit-opened';
import { QueueBackend1764620000000 } from './1764620000000-queue-backend';
import { StuckOrdersIndex1764620100000 } from './1764620100000-stuck-orders-index';
import { LedgerDayBalances1764620200000 } from './1764620200000-ledger-day-balances';
import { OperatorActions1764620300000 } from './1764620300000-operator-actions';
import { CallbackRecord1764640000000 } from './1764640000000-callback-record';
import { Cashier1764660000000 } from './1764660000000-cashier';
import { AttemptFailedEvent1764690000000 } from './1764690000000-attempt-failed-event';
import { OneTransitionWriter1764710000000 } from './1764710000000-one-transition-writer';

// Every migration, in order. The apps import classes, not globs, so a new file is listed here too.
export const MIGRATIONS: (new () => MigrationInterface)[] = [
  InitialSchema1763700000000,
  OrderCounts1763800000000,
  OrderDayCounts1763900000000,
  AmountMismatchEvent1764000000000,
  MerchantMode1764000100000,
  DeliveryOrigin1764000200000,
  PortalUsers1764100000000,
  MerchantChangedNotify1764150000000,
  MoneyOut1764200000000,
  SecretGraceAndCallbackTools1764290000000,
  CallbackDispatch1764300000000,
  CallbackJobs1764400000000,
  OrderCountSlots1764410000000,
  LostNotificationQueries1764420000000,
  ChannelMode1764420100000,
  Reconciliation1764430000000,
  LeaseTokens1764440000000,
  MasterKeyCheck1764460000000,
  RetentionIndexes1764480000000,
  ChannelLinkChangedNotify1764491100000,
  DeliveryStatusCounts1764500000000,
  SettlementFunctions1764523000000,
  CircuitOpened1764530000000,
  QueueBackend1764620000000,
  StuckOrdersIndex1764620100000,
  LedgerDayBalances1764620200000,
  OperatorActions1764620300000,
  CallbackRecord1764640000000,
  Cashier1764660000000,
  AttemptFailedEvent1764690000000,
  OneTransitionWriter1764710000000,
];
