import { BANK_CARD_PATTERN, maskBankCard } from './bank-card';

describe('bank card numbers', () => {
  it.each([
    ['622202123456', '6222****3456'],
    ['6222021234561234', '6222********1234'],
    ['6222021234567891234', '6222***********1234'],
  ])('%s is shown as %s: first 4, last 4, a star for every digit between', (account, masked) => {
    expect(maskBankCard(account)).toBe(masked);
    expect(maskBankCard(account)).toHaveLength(account.length);
  });

  it.each([
    ['12 to 19 digits', '622202123456', true],
    ['19 digits', '6222021234567891234', true],
    ['11 digits', '62220212345', false],
    ['20 digits', '62220212345678912345', false],
    ['a space', '6222 0212 3456 1234', false],
    ['a letter', '6222O21234561234', false],
  ])('%s: %p valid %p', (_name, account, valid) => {
    expect(BANK_CARD_PATTERN.test(account)).toBe(valid);
  });
});
