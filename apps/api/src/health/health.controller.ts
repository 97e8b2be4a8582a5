import { Controller, Get } from '@nestjs/common';

@Controller()
export class HealthController {
  /** Liveness: answers while the process is up. */
  @Get('health')
  health(): { status: string } {
    return { status: 'ok' };
  }
}
