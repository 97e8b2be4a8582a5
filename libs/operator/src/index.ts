export * from './credentials';
export * from './operator.module';
export * from './operator.service';
