export * from './idempotent-create';
export * from './jobs-after-commit';
export * from './order-event-payload';
export * from './order-lifecycle';
export * from './orders-core.module';
export * from './order-no';
export * from './refund-lifecycle';
export * from './sell-order-lifecycle';
