export * from './channel-adapter';
export * from './channel-adapters';
export * from './channel-config';
export * from './epay.adapter';
export * from './sandbox.adapter';
