import { type MessageKey, en } from './en';
import { zhCN } from './zh-CN';

export const LANGS = ['zh-CN', 'en'] as const;
export type Lang = (typeof LANGS)[number];
export type Translate = (key: MessageKey, params?: Record<string, string | number>) => string;

export const DICTIONARIES: Record<Lang, Record<MessageKey, string>> = { 'zh-CN': zhCN, en };

export function isLang(value: unknown): value is Lang {
  return value === 'zh-CN' || value === 'en';
}

/** The language a browser prefers among ours, by Accept-Language with its q values; English when neither is asked for. */
export function negotiateLang(acceptLanguage: string | undefined): Lang {
  let best: { lang: Lang; q: number } | null = null;
  for (const part of (acceptLanguage ?? '').split(',').slice(0, 32)) {
    const [tag, ...params] = part.trim().toLowerCase().split(';');
    const qParam = params.find((p) => p.trim().startsWith('q='));
    const q = qParam ? Number(qParam.trim().slice(2)) : 1;
    if (!Number.isFinite(q) || q <= 0) continue;
    const lang: Lang | null = tag === 'zh' || tag.startsWith('zh-') ? 'zh-CN' : tag === 'en' || tag.startsWith('en-') ? 'en' : null;
    if (lang && (!best || q > best.q)) best = { lang, q };
  }
  return best?.lang ?? 'en';
}

export function translator(lang: Lang): Translate {
  const dictionary = DICTIONARIES[lang];
  return (key, params) => {
    const text = dictionary[key] ?? key;
    return params ? text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole)) : text;
  };
}
