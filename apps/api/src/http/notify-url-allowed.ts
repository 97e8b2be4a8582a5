import { type AppConfig, DomainError, apiMessage } from '@app/common';
import { blockedRange, refusedNotifyHost } from '@app/callbacks';

/**
 * SPEC 7 Address: with CALLBACK_ALLOW_PRIVATE off, a notify_url naming localhost or a literal
 * private address is 40000 where it is given, instead of a delivery retried for 24 hours.
 * refusedNotifyHost decides; the words come from the tables (SPEC 2).
 */
export function assertNotifyUrlAllowed(notifyUrl: string | null | undefined, config: AppConfig): void {
  if (!notifyUrl || config.callbackAllowPrivate || !refusedNotifyHost(notifyUrl)) return;
  const host = new URL(notifyUrl).hostname.replace(/^\[|\]$/g, '');
  const range = host === 'localhost' || host.endsWith('.localhost') ? null : blockedRange(host);
  throw DomainError.invalid('notify_url', range ? apiMessage('notifyUrl.blockedRange', { host, range }) : apiMessage('notifyUrl.loopback', { host }));
}
