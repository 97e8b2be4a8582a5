export * from './credentials';
export * from './operator.module';
export * from './operator.service';
export * from './key-reseal.service';
export * from './callback-operations.service';
export * from './order-inspection.service';
export * from './worker-control.service';
