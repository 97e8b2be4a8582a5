import { Injectable } from '@nestjs/common';
import { KEY_CHECK_CONTEXT, SecretBox, merchantSecretContext, previousMerchantSecretContext } from '@app/common';
import { SEALED_COLUMNS, type SealedColumn, SealedValueRepository } from '@app/db';
import { channelConfigContext } from '@app/channels';
import { payeeAccountContext } from '@app/orders';

/** The SecretBox context of each sealed column, from the subject its row names. */
const CONTEXTS: Record<SealedColumn, (subject: string) => string> = {
  merchant_secret: merchantSecretContext,
  merchant_previous_secret: previousMerchantSecretContext,
  channel_config: (id) => channelConfigContext(Number(id)),
  payee_account: payeeAccountContext,
  master_key_check: () => KEY_CHECK_CONTEXT,
};

const BATCH = 500;

export interface ResealReport {
  key_id: string;
  /** Values sealed again under the current key, by column. */
  resealed: Record<SealedColumn, number>;
  /** Values already under the current key. */
  current: number;
  /** Values changed by someone else while this ran (they were sealed under the current key by that change). */
  skipped: number;
}

/**
 * `keys:reseal`: every sealed value not under the first key of the ring is opened with the key
 * that sealed it and sealed again under the first, row by row, so the old key can be dropped.
 * Safe to run again and while the service runs.
 */
@Injectable()
export class KeyResealService {
  constructor(
    private readonly sealedValues: SealedValueRepository,
    private readonly secrets: SecretBox,
  ) {}

  async reseal(): Promise<ResealReport> {
    const report: ResealReport = { key_id: this.secrets.currentKeyId, resealed: {} as ResealReport['resealed'], current: 0, skipped: 0 };
    for (const kind of Object.keys(SEALED_COLUMNS) as SealedColumn[]) {
      report.resealed[kind] = 0;
      let after = '0';
      for (;;) {
        const batch = await this.sealedValues.batch(kind, after, BATCH);
        if (batch.length === 0) break;
        for (const { id, subject, sealed } of batch) {
          if (!this.secrets.isStale(sealed)) {
            report.current++;
            continue;
          }
          const context = CONTEXTS[kind](subject);
          const resealed = this.secrets.seal(this.secrets.open(sealed, context), context);
          if (await this.sealedValues.replace(kind, id, sealed, resealed)) report.resealed[kind]++;
          else report.skipped++;
        }
        after = batch[batch.length - 1].id;
      }
    }
    return report;
  }
}
