import { Module } from '@nestjs/common';
import { OrdersCoreModule } from '@app/orders';
import { ReconService } from './recon.service';

/** Reconciliation, for the worker's daily job and the CLI. Needs the global CommonModule, DbModule and QueueModule. */
@Module({
  imports: [OrdersCoreModule],
  providers: [ReconService],
  exports: [ReconService],
})
export class ReconModule {}
