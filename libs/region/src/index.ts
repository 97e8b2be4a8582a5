export * from './conversion-rules';
export * from './region-data';
export * from './region-tree';
export * from './region-validation';
