import { unixSeconds } from './time';

/** The one response shape of every region and merchant operation (SPEC 1). */
export interface Envelope<T = unknown> {
  code: number;
  msg: string;
  time: string;
  data: T;
}

export function envelope<T>(code: number, msg: string, data: T): Envelope<T> {
  return { code, msg, time: String(unixSeconds()), data };
}

export function ok<T>(data: T, msg = 'ok'): Envelope<T> {
  return envelope(1, msg, data);
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
