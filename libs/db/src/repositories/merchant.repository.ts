import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { Merchant, type MerchantMode, type MerchantStatus } from '../entities';

export interface NewMerchant {
  name: string;
  mode: MerchantMode;
  apiKey: string;
  apiSecretEnc: string;
  notifyUrl: string | null;
  depositRate: string;
}

@Injectable()
export class MerchantRepository {
  constructor(@InjectRepository(Merchant) private readonly merchants: Repository<Merchant>) {}

  /** Every signed request starts here: plain SQL, since the query builder cost more CPU than the query. */
  async findByApiKey(apiKey: string): Promise<Merchant | null> {
    const rows: Merchant[] = await this.merchants.query(
      `SELECT id, name, status, mode, api_key AS "apiKey", api_secret_enc AS "apiSecretEnc",
              api_secret_previous_enc AS "apiSecretPreviousEnc", api_secret_previous_until AS "apiSecretPreviousUntil", notify_url AS "notifyUrl",
              deposit_rate AS "depositRate", created_at AS "createdAt", updated_at AS "updatedAt"
         FROM merchants WHERE api_key = $1`,
      [apiKey],
    );
    return rows[0] ?? null;
  }

  findById(id: number): Promise<Merchant | null> {
    return this.merchants.findOneBy({ id });
  }

  create(values: NewMerchant): Promise<Merchant> {
    return this.merchants.save(this.merchants.create({ ...values, status: 'active' }));
  }

  /** Returns false when no merchant has that id. */
  async update(id: number, values: Partial<Pick<Merchant, 'status' | 'notifyUrl' | 'depositRate' | 'apiSecretEnc'>>): Promise<boolean> {
    const result = await this.merchants.update({ id }, values);
    return (result.affected ?? 0) > 0;
  }

  setStatus(id: number, status: MerchantStatus): Promise<boolean> {
    return this.update(id, { status });
  }

  /**
   * A new current secret; the one it replaces keeps verifying for `graceMs` (0: not at all). One
   * transaction with the row locked, so two rotations at once keep a consistent pair. `seal`
   * gets the api_key and the current sealed secret and answers the new sealed pair. Returns
   * when the previous secret stops verifying (null: at once), or undefined for no such merchant.
   */
  async rotateSecret(
    id: number,
    graceMs: number,
    seal: (apiKey: string, currentEnc: string) => { currentEnc: string; previousEnc: string },
  ): Promise<{ apiKey: string; mode: MerchantMode; previousUntil: Date | null } | undefined> {
    return this.merchants.manager.transaction(async (em) => {
      const [row]: { api_key: string; mode: MerchantMode; api_secret_enc: string }[] = await em.query(
        `SELECT api_key, mode, api_secret_enc FROM merchants WHERE id = $1 FOR UPDATE`,
        [id],
      );
      if (!row) return undefined;
      const sealed = seal(row.api_key, row.api_secret_enc);
      // In a CTE: TypeORM answers a bare UPDATE with [rows, count], a SELECT with its rows.
      const [updated]: { until: Date | null }[] = await em.query(
        `WITH u AS (UPDATE merchants
            SET api_secret_enc = $2,
                api_secret_previous_enc = CASE WHEN $4::bigint > 0 THEN $3 END,
                api_secret_previous_until = CASE WHEN $4::bigint > 0 THEN now() + $4::bigint * interval '1 millisecond' END,
                updated_at = now()
          WHERE id = $1
          RETURNING api_secret_previous_until AS until)
         SELECT until FROM u`,
        [id, sealed.currentEnc, sealed.previousEnc, graceMs],
      );
      return { apiKey: row.api_key, mode: row.mode, previousUntil: updated.until };
    });
  }
}
