import { Column, Entity, Index } from 'typeorm';

/**
 * A failed portal sign-in, counted per email over a window. The table has no key of its own (rows
 * are appended and pruned, never addressed one by one): the pair below is TypeORM's handle only.
 */
@Entity('portal_sign_in_failures')
@Index('ix_sign_in_failures_email', ['email', 'failedAt'])
export class SignInFailure {
  @Column({ type: 'varchar', length: 254, primary: true })
  email: string;

  @Column({ name: 'failed_at', type: 'timestamptz', primary: true, default: () => 'now()' })
  failedAt: Date;
}

/** An email locked out of the portal's sign-in until a time. */
@Entity('portal_sign_in_locks')
export class SignInLock {
  @Column({ type: 'varchar', length: 254, primary: true })
  email: string;

  @Column({ name: 'locked_until', type: 'timestamptz' })
  lockedUntil: Date;
}
