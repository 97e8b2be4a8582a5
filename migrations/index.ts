import type { MigrationInterface } from 'typeorm';
import { InitialSchema1763700000000 } from './1763700000000-initial-schema';
import { OrderCounts1763800000000 } from './1763800000000-order-counts';
import { MerchantChangedNotify1764150000000 } from './1764150000000-merchant-changed-notify';

// Every migration, in order. The apps import classes, not globs, so a new file is listed here too.
export const MIGRATIONS: (new () => MigrationInterface)[] = [InitialSchema1763700000000, OrderCounts1763800000000, MerchantChangedNotify1764150000000];
