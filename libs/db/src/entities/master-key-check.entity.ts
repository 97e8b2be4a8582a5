import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The one check value that tells at start whether the configured master key is this database's. */
@Entity('master_key_check')
export class MasterKeyCheck {
  @PrimaryColumn({ type: 'smallint' })
  id: number;

  /** A known text sealed with SecretBox under KEY_CHECK_CONTEXT. */
  @Column({ type: 'text' })
  sealed: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
