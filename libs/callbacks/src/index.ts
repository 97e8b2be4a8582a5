export * from './address-guard';
export * from './callback-payload';
export * from './callback-sender';
export * from './retry-policy';
export * from './callback-tools';
export * from './delivery-policy';
export * from './circuit';
export * from './destination-gate';
