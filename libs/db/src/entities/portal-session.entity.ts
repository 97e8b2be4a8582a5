import { Column, CreateDateColumn, Entity, Index } from 'typeorm';

/** A signed-in portal session; the cookie's id is stored only as its SHA-256. */
@Entity('portal_sessions')
@Index('ix_portal_sessions_user', ['userId'])
@Index('ix_portal_sessions_expires', ['expiresAt'])
export class PortalSession {
  @Column({ name: 'id_hash', type: 'char', length: 64, primary: true })
  idHash: string;

  @Column({ name: 'user_id', type: 'integer' })
  userId: number;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'last_seen_at', type: 'timestamptz', default: () => 'now()' })
  lastSeenAt: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
