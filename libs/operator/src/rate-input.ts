import { formatRate, parseRate } from '@app/common';
import { OperatorInputError } from './operator-input-error';

/** A merchant's deposit rate or a channel's service rate as given (absent is 0), in its stored form. */
export function rateInput(value: string | undefined, name: string): string {
  const parsed = value === undefined ? 0 : parseRate(value);
  if (parsed === null || parsed > 100_000_000) throw new OperatorInputError(name, 'must be a rate from 0 to 1 with at most 8 decimals');
  return formatRate(parsed);
}
