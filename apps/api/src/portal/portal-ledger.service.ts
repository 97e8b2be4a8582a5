import { Injectable } from '@nestjs/common';
import { type LedgerLine, LedgerRepository } from '@app/db';

export const LEDGER_PAGE_SIZE = 20;
/** The overview's short list of the latest movements, above its link to the ledger page. */
export const OVERVIEW_LEDGER_LINES = 5;
// An entry id as the database writes it (bigint), so no cursor ever reaches SQL as anything else.
const ENTRY_ID = /^[1-9]\d{0,17}$/;

export interface LedgerPage {
  lines: LedgerLine[];
  /** The cursor of the next (older) page, or null on the last one. */
  nextBefore: string | null;
}

/** The ledger page's cursor from the query string: null for the first page, undefined for anything that is not an entry id. */
export function ledgerCursor(value: unknown): string | null | undefined {
  if (value === undefined || value === '') return null;
  return typeof value === 'string' && ENTRY_ID.test(value) ? value : undefined;
}

/** The merchant's ledger as the portal shows it: movements of money, newest first, a page at a time. */
@Injectable()
export class PortalLedgerService {
  constructor(private readonly ledger: LedgerRepository) {}

  /** One page, read one line further to know whether an older page exists (no count over the whole ledger). */
  async page(merchantId: number, before: string | null, size = LEDGER_PAGE_SIZE): Promise<LedgerPage> {
    const rows = await this.ledger.movements(merchantId, size + 1, before);
    const lines = rows.slice(0, size);
    return { lines, nextBefore: rows.length > size ? lines[lines.length - 1].id : null };
  }
}
