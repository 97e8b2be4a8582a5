import { prepareTemplateDatabase } from './helpers/database';

/** Migrates one template database; every spec file clones its own from it. */
export default async function globalSetup(): Promise<void> {
  await prepareTemplateDatabase();
}
