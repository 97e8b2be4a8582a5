/** A request the service refuses (no such merchant, a link across modes), worded for any front end. */
export class OperatorError extends Error {}
