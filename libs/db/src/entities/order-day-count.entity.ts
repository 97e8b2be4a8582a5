import { Entity, PrimaryColumn } from 'typeorm';
import { OrderCounterSlot } from './order-count.entity';

/** Like OrderCount, per UTC day of the orders' created_at: what lets a time-bounded total skip whole days. */
@Entity('order_day_counts')
export class OrderDayCount extends OrderCounterSlot {
  /** YYYY-MM-DD, UTC. */
  @PrimaryColumn({ type: 'date' })
  day: string;
}
