import { type ApiMessageKey, en } from './en';
import { zhCN } from './zh-CN';

/** The languages the API and the portal speak (SPEC 2, 8a). */
export const LANGS = ['zh-CN', 'en'] as const;
export type Lang = (typeof LANGS)[number];

/** The names between braces in a template: `'{field} must be at most {max}'` gives `'field' | 'max'`. */
type PlaceholdersOf<T extends string> = T extends `${string}{${infer Name}}${infer Rest}` ? Name | PlaceholdersOf<Rest> : never;
/** What `apiMessage(key, ...)` takes after the key: nothing, or a value for every placeholder. */
export type ApiMessageParams<K extends ApiMessageKey> = [PlaceholdersOf<(typeof en)[K]>] extends [never]
  ? []
  : [Record<PlaceholdersOf<(typeof en)[K]>, string | number>];

/** Words the API says, by key, with their values: written in the request's language only when answered. */
export interface ApiMessage {
  key: ApiMessageKey;
  params?: Record<string, string | number>;
}

/** A message of the tables; its placeholders, when it has any, must all be given (a type error otherwise). */
export function apiMessage<K extends ApiMessageKey>(key: K, ...params: ApiMessageParams<K>): ApiMessage {
  return params.length === 0 ? { key } : { key, params: params[0] };
}

const TABLES: Record<Lang, Record<ApiMessageKey, string>> = { en, 'zh-CN': zhCN };

/** The message in `lang`, its placeholders filled. */
export function renderApiMessage(message: ApiMessage, lang: Lang): string {
  const text = TABLES[lang][message.key];
  const params = message.params;
  return params ? text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole)) : text;
}

/** The tables themselves, for tests and the document. */
export function apiMessageTable(lang: Lang): Readonly<Record<ApiMessageKey, string>> {
  return TABLES[lang];
}

/**
 * The language an Accept-Language header prefers among ours, by its q values (SPEC 2): Simplified
 * Chinese for any `zh` tag (zh, zh-CN, zh-Hans; a zh-TW reader too reads it rather than English),
 * English when neither is asked for.
 */
export function negotiateLang(acceptLanguage: string | string[] | undefined): Lang {
  let best: { lang: Lang; q: number } | null = null;
  const header = Array.isArray(acceptLanguage) ? acceptLanguage.join(',') : (acceptLanguage ?? '');
  for (const part of header.split(',').slice(0, 32)) {
    const [tag, ...params] = part.trim().toLowerCase().split(';');
    const qParam = params.find((p) => p.trim().startsWith('q='));
    const q = qParam ? Number(qParam.trim().slice(2)) : 1;
    if (!Number.isFinite(q) || q <= 0) continue;
    const lang: Lang | null = tag === 'zh' || tag.startsWith('zh-') ? 'zh-CN' : tag === 'en' || tag.startsWith('en-') ? 'en' : null;
    if (lang && (!best || q > best.q)) best = { lang, q };
  }
  return best?.lang ?? 'en';
}
