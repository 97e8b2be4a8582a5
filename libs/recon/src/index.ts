export * from './bill-line';
export * from './bills/parse-bill';
export * from './matcher';
export * from './recon-day';
export * from './recon-metrics';
export * from './recon.module';
export * from './recon.service';
