import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { LEDGER_KINDS, ORDER_EVENT_TYPES, REFUND_STATUSES } from '@app/db';
import { en } from './en';
import { DICTIONARIES, LANGS, negotiateLang, translator } from './i18n';

const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

describe('portal dictionaries', () => {
  it('have the same keys and the same placeholders in every language, none empty', () => {
    const keys = Object.keys(en).sort();
    for (const lang of LANGS) {
      const dictionary = DICTIONARIES[lang];
      expect([lang, Object.keys(dictionary).sort()]).toEqual([lang, keys]);
      for (const key of keys) {
        const text = dictionary[key as keyof typeof en];
        expect([lang, key, text.trim().length > 0]).toEqual([lang, key, true]);
        expect([lang, key, placeholders(text)]).toEqual([lang, key, placeholders(en[key as keyof typeof en])]);
      }
    }
  });

  it('have every key a template asks for (literal keys and the prefixes of computed ones)', () => {
    const views = join(__dirname, '..', 'views');
    const keys = new Set(Object.keys(en));
    for (const file of readdirSync(views)) {
      const source = readFileSync(join(views, file), 'utf8');
      for (const [, key] of source.matchAll(/it\.t\('([^']+)'\s*[,)]/g)) expect([file, key, keys.has(key)]).toEqual([file, key, true]);
      for (const [, prefix] of source.matchAll(/it\.t\('([^']+\.)'\s*\+/g)) {
        expect([file, prefix, [...keys].some((k) => k.startsWith(prefix))]).toEqual([file, prefix, true]);
      }
    }
  });

  it('name every order event type the timeline can show', () => {
    for (const type of ORDER_EVENT_TYPES) expect([type, `event.${type}` in en]).toEqual([type, true]);
  });

  it('name every ledger kind, refund status and sell order event the money pages can show', () => {
    for (const kind of Object.keys(LEDGER_KINDS)) expect([kind, `ledger.kind.${kind}` in en]).toEqual([kind, true]);
    for (const status of REFUND_STATUSES) expect([status, `refundStatus.${status}` in en]).toEqual([status, true]);
    // order.eta names a sell order's creation and its order events with the sellEvent texts.
    for (const type of ['created', 'order.paid', 'order.completed', 'order.cancelled']) expect([type, `sellEvent.${type}` in en]).toEqual([type, true]);
  });

  it('fills placeholders and keeps unknown ones', () => {
    expect(translator('en')('orders.page', { page: 2, pages: 5 })).toBe('Page 2 of 5');
    expect(translator('zh-CN')('orders.page', { page: 2, pages: 5 })).toBe('第 2 页，共 5 页');
    expect(translator('en')('orders.page')).toBe('Page {page} of {pages}');
  });

  it("picks the browser's preferred language among zh-CN and en, English otherwise", () => {
    expect(negotiateLang('zh-CN,zh;q=0.9,en;q=0.8')).toBe('zh-CN');
    expect(negotiateLang('zh-TW')).toBe('zh-CN');
    expect(negotiateLang('en-US,en;q=0.9,zh-CN;q=0.8')).toBe('en');
    expect(negotiateLang('fr-FR,zh;q=0.7,en;q=0.5')).toBe('zh-CN');
    expect(negotiateLang('fr-FR')).toBe('en');
    expect(negotiateLang(undefined)).toBe('en');
    expect(negotiateLang('zh;q=0, en;q=0.1')).toBe('en');
  });
});
