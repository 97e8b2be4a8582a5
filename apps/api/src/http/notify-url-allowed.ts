import { type AppConfig, DomainError } from '@app/common';
import { refusedNotifyHost } from '@app/callbacks';

/**
 * SPEC 7 Address: with CALLBACK_ALLOW_PRIVATE off, a notify_url naming localhost or a literal
 * private address is 40000 where it is given, instead of a delivery retried for 24 hours.
 */
export function assertNotifyUrlAllowed(notifyUrl: string | null | undefined, config: AppConfig): void {
  if (!notifyUrl || config.callbackAllowPrivate) return;
  const why = refusedNotifyHost(notifyUrl);
  if (why) throw DomainError.invalid('notify_url', why);
}
