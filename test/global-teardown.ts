import { dropTestDatabases } from './helpers/database';
import { removeRunKeys } from './helpers/redis-keys';

/** Removes what this run made and nothing else: its Redis keys (read from its databases first), then its databases. */
export default async function globalTeardown(): Promise<void> {
  try {
    await removeRunKeys();
  } finally {
    await dropTestDatabases();
  }
}
