import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** Every column that holds a value sealed with the master key, by what names its SecretBox context. */
export const SEALED_COLUMNS = {
  merchant_secret: { table: 'merchants', id: 'id', column: 'api_secret_enc', subject: 't.api_key', join: '' },
  merchant_previous_secret: { table: 'merchants', id: 'id', column: 'api_secret_previous_enc', subject: 't.api_key', join: '' },
  channel_config: { table: 'channels', id: 'id', column: 'config_enc', subject: 't.id::text', join: '' },
  payee_account: { table: 'payouts', id: 'order_id', column: 'payee_account_enc', subject: 'o.order_no', join: 'JOIN orders o ON o.id = t.order_id' },
  master_key_check: { table: 'master_key_check', id: 'id', column: 'sealed', subject: "''", join: '' },
} as const;

export type SealedColumn = keyof typeof SEALED_COLUMNS;

export interface SealedValue {
  id: string;
  /** What the context is built from: the api_key, the channel id, the order_no. */
  subject: string;
  sealed: string;
}

/** Reads and replaces sealed values in batches, for `keys:reseal`. */
@Injectable()
export class SealedValueRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The next batch after `afterId`, in id order, of the rows whose column holds a value. */
  async batch(kind: SealedColumn, afterId: string, limit: number): Promise<SealedValue[]> {
    const c = SEALED_COLUMNS[kind];
    return this.dataSource.query(
      `SELECT t.${c.id}::text AS id, ${c.subject} AS subject, t.${c.column} AS sealed
         FROM ${c.table} t ${c.join}
        WHERE t.${c.column} IS NOT NULL AND t.${c.id} > $1::bigint
        ORDER BY t.${c.id} LIMIT $2`,
      [afterId, limit],
    );
  }

  /** Replaces a value only if it is still the one read: a rotation or a change meanwhile wins. */
  async replace(kind: SealedColumn, id: string, was: string, now: string): Promise<boolean> {
    const c = SEALED_COLUMNS[kind];
    const [, count] = (await this.dataSource.query(`UPDATE ${c.table} SET ${c.column} = $3 WHERE ${c.id} = $1::bigint AND ${c.column} = $2`, [
      id,
      was,
      now,
    ])) as [unknown, number];
    return count === 1;
  }

  /** The check value, or null on a database no app has started on yet. */
  async keyCheck(): Promise<string | null> {
    const rows: { sealed: string }[] = await this.dataSource.query(`SELECT sealed FROM master_key_check WHERE id = 1`);
    return rows[0]?.sealed ?? null;
  }

  /** Writes the check value unless one exists (two apps starting at once: the first wins); returns the one stored. */
  async createKeyCheck(sealed: string): Promise<string> {
    await this.dataSource.query(`INSERT INTO master_key_check (id, sealed) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, [sealed]);
    return (await this.keyCheck()) as string;
  }
}
