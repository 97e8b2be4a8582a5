export * from './canonical';
export * from './sign';
