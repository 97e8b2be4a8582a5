import { type Lang, LANGS, negotiateLang } from '@app/common';
import { type MessageKey, en } from './en';
import { zhCN } from './zh-CN';

// One rule for the portal's pages and the API's msg (SPEC 2, 8a): which language a browser prefers.
export { LANGS, type Lang, negotiateLang };
export type Translate = (key: MessageKey, params?: Record<string, string | number>) => string;

export const DICTIONARIES: Record<Lang, Record<MessageKey, string>> = { 'zh-CN': zhCN, en };

export function isLang(value: unknown): value is Lang {
  return value === 'zh-CN' || value === 'en';
}

export function translator(lang: Lang): Translate {
  const dictionary = DICTIONARIES[lang];
  return (key, params) => {
    const text = dictionary[key] ?? key;
    return params ? text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole)) : text;
  };
}
