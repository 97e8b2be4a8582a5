export * from './bill-line';
export * from './bills/alipay-bill.parser';
export * from './bills/parse-bill';
export * from './bills/wechatpay-bill.parser';
export * from './matcher';
export * from './recon-day';
export * from './recon.module';
export * from './recon.service';
