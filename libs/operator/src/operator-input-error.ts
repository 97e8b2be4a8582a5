import { OperatorError } from './operator-error';

/**
 * A bad input, named by the service's own parameter (`notifyUrl`, `grace`), not by any front
 * end's wording of it: the CLI says its flag (--notify-url), the portal its form field. Another
 * parameter named in the reason is written `like this`, for the front end to word too.
 */
export class OperatorInputError extends OperatorError {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field} ${reason}`);
  }
}
