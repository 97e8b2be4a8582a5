/** A payee's bank card number (SPEC 5): 12 to 19 digits. */
export const BANK_CARD_PATTERN = /^\d{12,19}$/;

/** 6222021234561234 -> 6222********1234: the only form in which a card number is shown or logged. */
export function maskBankCard(account: string): string {
  return `${account.slice(0, 4)}${'*'.repeat(Math.max(0, account.length - 8))}${account.slice(-4)}`;
}
