export * from './order-event-payload';
export * from './order-lifecycle';
export * from './orders-core.module';
export * from './order-no';
