import type { MigrationInterface } from 'typeorm';
import { InitialSchema1763700000000 } from './1763700000000-initial-schema';

// Every migration, in order. The apps import classes, not globs, so a new file is listed here too.
export const MIGRATIONS: (new () => MigrationInterface)[] = [InitialSchema1763700000000];
