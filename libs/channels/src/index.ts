export * from './alipay.adapter';
export * from './channel-adapter';
export * from './channel-adapters';
export * from './channel-config';
export * from './channel-mode';
export * from './epay.adapter';
export * from './sandbox.adapter';
export * from './wechatpay.adapter';
