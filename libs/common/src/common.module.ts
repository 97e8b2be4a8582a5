import { type DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './config';
import { SecretBox } from './secret-box';

/** The validated configuration and the secret box, for every app. */
@Global()
@Module({})
export class CommonModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: CommonModule,
      providers: [
        { provide: AppConfig, useValue: config },
        { provide: SecretBox, useFactory: (c: AppConfig) => new SecretBox(c.masterKeys), inject: [AppConfig] },
      ],
      exports: [AppConfig, SecretBox],
    };
  }
}
