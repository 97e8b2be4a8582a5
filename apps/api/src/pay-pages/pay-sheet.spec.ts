import { payerOutcome } from './pay-sheet';

describe('payerOutcome: where an order stands for its payer', () => {
  const now = new Date('2026-01-01T12:00:00Z');
  const before = new Date(now.getTime() - 60_000);
  const after = new Date(now.getTime() + 60_000);

  it('a pending order is open until expires_at, then out of time even before the expiry pass cancels it', () => {
    expect(payerOutcome({ status: 'pending', expiresAt: after, updatedAt: before }, now)).toBe('open');
    expect(payerOutcome({ status: 'pending', expiresAt: now, updatedAt: before }, now)).toBe('expired');
  });

  it('a cancelled order ran out of time when cancelled at or after expires_at, else it was closed', () => {
    expect(payerOutcome({ status: 'cancelled', expiresAt: before, updatedAt: before }, now)).toBe('expired');
    expect(payerOutcome({ status: 'cancelled', expiresAt: before, updatedAt: now }, now)).toBe('expired');
    // Closed by the shop or the channel before its time: still closed once that time has passed.
    expect(payerOutcome({ status: 'cancelled', expiresAt: before, updatedAt: new Date(before.getTime() - 1) }, now)).toBe('closed');
    expect(payerOutcome({ status: 'cancelled', expiresAt: after, updatedAt: before }, now)).toBe('closed');
  });

  it('paid, confirmed and completed are all paid to the payer', () => {
    for (const status of ['paid', 'confirmed', 'completed']) expect(payerOutcome({ status, expiresAt: before, updatedAt: now }, now)).toBe('paid');
  });
});
