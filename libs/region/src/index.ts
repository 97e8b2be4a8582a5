export * from './conversion-rules';
export * from './region-tree';
export * from './region-validation';
