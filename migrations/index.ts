import type { MigrationInterface } from 'typeorm';
import { InitialSchema1763700000000 } from './1763700000000-initial-schema';
import { OrderCounts1763800000000 } from './1763800000000-order-counts';
import { OrderDayCounts1763900000000 } from './1763900000000-order-day-counts';

// Every migration, in order. The apps import classes, not globs, so a new file is listed here too.
export const MIGRATIONS: (new () => MigrationInterface)[] = [InitialSchema1763700000000, OrderCounts1763800000000, OrderDayCounts1763900000000];
