export * from './data-source';
export * from './db.module';
export * from './entities';
export * from './repositories/channel.repository';
export * from './repositories/merchant.repository';
