export * from './credentials';
export * from './operator.module';
export * from './operator.service';
export * from './key-reseal.service';
