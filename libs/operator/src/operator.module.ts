import { type DynamicModule, Module } from '@nestjs/common';
import { type AppConfig, CommonModule } from '@app/common';
import { DbModule } from '@app/db';
import { KeyResealService } from './key-reseal.service';
import { OperatorService } from './operator.service';

/**
 * What an operator does to merchants, channels and links, as a standalone context: the CLI,
 * the embedded launcher's demo merchant, the chaos script and the tests' fixtures share it.
 */
@Module({})
export class OperatorModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: OperatorModule,
      imports: [CommonModule.forRoot(config), DbModule.forRoot(2, 'merchant-pay-cli')],
      providers: [OperatorService, KeyResealService],
      exports: [OperatorService, KeyResealService],
    };
  }

  /** The same service inside an app that already has the global CommonModule and DbModule (the API's portal). */
  static forFeature(): DynamicModule {
    return { module: OperatorModule, providers: [OperatorService], exports: [OperatorService] };
  }
}
