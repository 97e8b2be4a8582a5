import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** One operator CLI command as it ran: who, what (its options, secrets left out), when, how it ended. */
@Entity('operator_actions')
@Index('ix_operator_actions_at', ['at'])
export class OperatorAction {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ type: 'timestamptz' })
  at: Date;

  /** OPERATOR (a person's name) or the system user, @ the host the CLI ran on. */
  @Column({ type: 'varchar', length: 256 })
  actor: string;

  @Column({ type: 'varchar', length: 64 })
  command: string;

  @Column({ type: 'jsonb' })
  options: Record<string, string>;

  @Column({ type: 'varchar', length: 16 })
  outcome: 'ok' | 'refused' | 'failed';

  @Column({ type: 'varchar', length: 512, nullable: true })
  error: string | null;
}
