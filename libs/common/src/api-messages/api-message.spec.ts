import { DomainError, ErrorCode, codeMessage } from '../error-code';
import { localizeEnvelope, ok } from '../envelope';
import { LANGS, apiMessage, apiMessageTable, negotiateLang, renderApiMessage } from './api-message';
import { type ApiMessageKey, en } from './en';

const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
const CHINESE = /\p{Script=Han}/u;
/** A rule written without words of the tables passes class-validator's text through: no words of its own. */
const PASSTHROUGH: ApiMessageKey[] = ['field.unlisted'];

describe('the API message tables (SPEC 2)', () => {
  it('have the same keys and placeholders in every language, none empty, the Chinese in Chinese', () => {
    const keys = Object.keys(en).sort();
    for (const lang of LANGS) {
      const table = apiMessageTable(lang);
      expect([lang, Object.keys(table).sort()]).toEqual([lang, keys]);
      for (const key of keys as ApiMessageKey[]) {
        expect([lang, key, table[key].trim().length > 0]).toEqual([lang, key, true]);
        expect([lang, key, placeholders(table[key])]).toEqual([lang, key, placeholders(en[key])]);
        if (lang === 'zh-CN' && !PASSTHROUGH.includes(key)) expect([key, CHINESE.test(table[key])]).toEqual([key, true]);
      }
    }
  });

  it("have every error code's own words", () => {
    const codes = Object.values(ErrorCode).filter((v): v is ErrorCode => typeof v === 'number');
    expect(codes).toHaveLength(22);
    for (const code of codes) {
      for (const lang of LANGS) expect([code, lang, renderApiMessage(codeMessage(code), lang).length > 0]).toEqual([code, lang, true]);
    }
  });

  it('keep parameter names as the merchant sends them in Chinese too', () => {
    const zh = apiMessageTable('zh-CN');
    for (const [key, text] of Object.entries(en) as [ApiMessageKey, string][]) {
      for (const name of text.match(/\b[a-z]+(?:_[a-z]+)+\b|\bapi_key\b|\bnonce\b/g) ?? [])
        expect([key, name, zh[key].includes(name)]).toEqual([key, name, true]);
    }
  });

  it('fill placeholders', () => {
    expect(renderApiMessage(apiMessage('field.maxLength', { field: 'reason', max: 128 }), 'en')).toBe('reason must be at most 128 characters');
    expect(renderApiMessage(apiMessage('field.maxLength', { field: 'reason', max: 128 }), 'zh-CN')).toBe('reason 最多 128 个字符');
  });
});

describe('DomainError', () => {
  it('says the same facts in the language asked for; code and data do not change', () => {
    const error = DomainError.invalidFields([
      { field: 'cny_amount', message: apiMessage('field.yuan', { field: 'cny_amount', example: '100.00' }) },
      { field: 'start_time', message: apiMessage('start_time.afterEnd') },
    ]);
    expect(error.message).toBe(
      'cny_amount must be a yuan amount greater than 0 with at most 2 decimals, like "100.00"; start_time: must not be after end_time',
    );
    expect(error.msgIn('en')).toBe(error.message);
    expect(error.msgIn('zh-CN')).toBe('cny_amount 须为大于 0 的金额（单位：元），最多两位小数，例如 "100.00"；start_time：不能晚于 end_time');
    expect(error.data).toEqual({
      errors: [
        { field: 'cny_amount', message: 'cny_amount must be a yuan amount greater than 0 with at most 2 decimals, like "100.00"' },
        { field: 'start_time', message: 'must not be after end_time' },
      ],
    });
    expect(new DomainError(ErrorCode.InsufficientBalance).msgIn('zh-CN')).toBe('可用余额不足');
    expect(DomainError.invalidFields([]).msgIn('en')).toBe('Invalid parameters');
  });
});

describe('success envelopes', () => {
  it("write ok's msg in the request's language, leaving anything else alone", () => {
    const answer = ok({ n: 1 }, apiMessage('order.created'));
    expect(JSON.parse(JSON.stringify(answer))).toEqual({ code: 1, msg: 'Order created', time: answer.time, data: { n: 1 } });
    expect(localizeEnvelope(answer, 'zh-CN')).toEqual({ ...answer, msg: '订单已创建' });
    expect(localizeEnvelope(answer, 'en')).toBe(answer);
    const other = { code: 1, msg: 'ok', time: '1', data: null };
    expect(localizeEnvelope(other, 'zh-CN')).toBe(other);
    expect(localizeEnvelope('success', 'zh-CN')).toBe('success');
  });
});

describe('negotiateLang', () => {
  it('prefers Chinese for any zh tag by q value, English otherwise', () => {
    expect(negotiateLang('zh-CN')).toBe('zh-CN');
    expect(negotiateLang('zh-Hans')).toBe('zh-CN');
    expect(negotiateLang('zh')).toBe('zh-CN');
    expect(negotiateLang('en-US,en;q=0.9,zh-CN;q=0.8')).toBe('en');
    expect(negotiateLang('en;q=0.5, zh-CN;q=0.6')).toBe('zh-CN');
    expect(negotiateLang(['fr', 'zh;q=0.3'])).toBe('zh-CN');
    expect(negotiateLang('*')).toBe('en');
    expect(negotiateLang(undefined)).toBe('en');
  });
});
