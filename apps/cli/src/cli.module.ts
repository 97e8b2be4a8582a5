import { type DynamicModule, Module } from '@nestjs/common';
import { type AppConfig, CommonModule } from '@app/common';
import { DbModule } from '@app/db';
import { OperatorService } from './operator.service';

@Module({})
export class CliModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: CliModule,
      imports: [CommonModule.forRoot(config), DbModule.forRoot(2)],
      providers: [OperatorService],
      exports: [OperatorService],
    };
  }
}
