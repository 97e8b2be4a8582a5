import { Controller, Get, Render, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { AppConfig, ERROR_INFO, ErrorCode, type Lang, codeMessage, renderApiMessage } from '@app/common';
import { canonicalString, sign } from '@app/signature';
import { SIGNING_EXAMPLE } from '../http/openapi';
import { PortalExceptionFilter } from './portal-exception.filter';
import { PortalPageGuard } from './portal-page.guard';
import { PortalLangOf } from './portal-request';

const UNITS: Record<Lang, [number, string][]> = {
  en: [
    [3_600_000, ' h'],
    [60_000, ' min'],
    [1000, ' s'],
  ],
  'zh-CN': [
    [3_600_000, ' 小时'],
    [60_000, ' 分钟'],
    [1000, ' 秒'],
  ],
};

/** The retry schedule as people read it: "15 s, 15 s, 30 s, 3 min, ..., 6 h". */
export function retrySchedule(scheduleMs: readonly number[], lang: Lang): string {
  const each = scheduleMs.map((ms) => {
    const [size, unit] = UNITS[lang].find(([unitMs]) => ms % unitMs === 0) ?? [1000, UNITS[lang][2][1]];
    return `${Math.max(1, Math.round(ms / size))}${unit}`;
  });
  return each.join(lang === 'zh-CN' ? '、' : ', ');
}

/**
 * `/portal/help` (SPEC 8a): what a merchant's developers need, in the portal's language, with this
 * service's own figures (base URL, clock tolerance, retry schedule), a signing example computed
 * by the service's signing code, and every error code with what to do about it.
 */
// HTML for people, not API: kept out of the OpenAPI document.
@ApiExcludeController()
@Controller('portal/help')
@UseGuards(PortalPageGuard)
@UseFilters(PortalExceptionFilter)
export class HelpController {
  constructor(private readonly config: AppConfig) {}

  @Get()
  @Render('help')
  page(@PortalLangOf() lang: Lang): object {
    const { params, secret } = SIGNING_EXAMPLE;
    const codes = Object.values(ErrorCode).filter((v): v is ErrorCode => typeof v === 'number');
    return {
      baseUrl: `${this.config.publicBaseUrl}${this.config.apiPrefix}`,
      tolerance: this.config.authToleranceSeconds,
      schedule: retrySchedule(this.config.callbackRetryScheduleMs, lang),
      example: { secret, body: JSON.stringify(params, null, 2), canonical: canonicalString(params), signature: sign(params, secret) },
      errors: codes.map((code) => ({ code, status: ERROR_INFO[code].status, means: renderApiMessage(codeMessage(code), lang) })),
    };
  }
}
