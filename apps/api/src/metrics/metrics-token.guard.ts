import { createHash, timingSafeEqual } from 'node:crypto';
import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppConfig, DomainError, ErrorCode, apiMessage } from '@app/common';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** METRICS_TOKEN (SPEC 8): when set, `Authorization: Bearer <token>`, else 401; unset, /metrics is open. */
@Injectable()
export class MetricsTokenGuard implements CanActivate {
  // Hashes of equal length, so the comparison takes the same time whatever was sent.
  private readonly expected: Buffer | null;

  constructor(config: AppConfig) {
    this.expected = config.metricsToken === null ? null : digest(config.metricsToken);
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.expected === null) return true;
    const header = context.switchToHttp().getRequest<FastifyRequest>().headers.authorization ?? '';
    const token = /^Bearer +(\S+)$/i.exec(header.trim())?.[1] ?? '';
    if (timingSafeEqual(digest(token), this.expected)) return true;
    throw new DomainError(ErrorCode.AuthMissing, apiMessage('auth.metricsToken'), null, { 'www-authenticate': 'Bearer' });
  }
}
