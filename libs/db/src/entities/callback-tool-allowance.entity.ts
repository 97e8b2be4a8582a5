import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A merchant's use of one callback tool in its current fixed window, shared by every API instance (SPEC 7). */
@Entity('callback_tool_allowances')
export class CallbackToolAllowance {
  @PrimaryColumn({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  @PrimaryColumn({ type: 'varchar', length: 16 })
  tool: 'recover' | 'test';

  @Column({ name: 'window_started_at', type: 'timestamptz' })
  windowStartedAt: Date;

  @Column({ type: 'integer' })
  used: number;
}
