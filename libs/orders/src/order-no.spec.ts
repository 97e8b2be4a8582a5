import { newOrderNo } from './order-no';

describe('newOrderNo', () => {
  it('is yyyyMMddHHmmss in Asia/Shanghai plus 8 random digits', () => {
    const no = newOrderNo(new Date('2026-12-31T16:30:05.999Z'));
    expect(no).toMatch(/^\d{22}$/);
    expect(no.slice(0, 14)).toBe('20270101003005');
  });
  it('differs between calls in the same second', () => {
    const now = new Date();
    expect(new Set(Array.from({ length: 50 }, () => newOrderNo(now))).size).toBeGreaterThan(45);
  });
});
