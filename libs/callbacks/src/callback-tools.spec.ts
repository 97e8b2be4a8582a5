import { INTERNAL_FAILURE_TEXT, RECOVER_MAX_AGE_SECONDS, deliveryView, firstCharacters, merchantFacingError, recoverWindow } from './callback-tools';

describe('callback tools', () => {
  const now = 1_763_700_000;

  it('recoverWindow: 7 days back at most, not in the future, end not before start, end defaults to now', () => {
    expect(recoverWindow(now - RECOVER_MAX_AGE_SECONDS, undefined, now)).toEqual({ from: now - RECOVER_MAX_AGE_SECONDS, to: now });
    expect(recoverWindow(now - 60, now - 30, now)).toEqual({ from: now - 60, to: now - 30 });
    expect(recoverWindow(now - 60, now - 60, now)).toEqual({ from: now - 60, to: now - 60 });
    expect(recoverWindow(now - RECOVER_MAX_AGE_SECONDS - 1, undefined, now)).toMatchObject({
      field: 'start_time',
      message: expect.stringMatching(/last 7 days/),
    });
    expect(recoverWindow(now + 1, undefined, now)).toMatchObject({ field: 'start_time', message: expect.stringMatching(/future/) });
    expect(recoverWindow(now - 60, now - 61, now)).toMatchObject({ field: 'end_time', message: expect.stringMatching(/before start_time/) });
  });

  it('cuts an excerpt to 256 characters without splitting a character made of two UTF-16 units', () => {
    expect(firstCharacters('a'.repeat(300))).toHaveLength(256);
    expect(firstCharacters(null)).toBeNull();
    const emoji = firstCharacters('😀'.repeat(300))!;
    expect(emoji).toBe('😀'.repeat(256));
  });

  it('deliveryView: SPEC 7 field names, times in Unix seconds', () => {
    const at = new Date('2025-11-21T04:00:00.900Z');
    expect(
      deliveryView({
        id: 'd1',
        eventId: 'e1',
        event: 'order.paid',
        url: 'https://shop.test/n',
        status: 'failed',
        attempts: [{ attemptedAt: at, httpStatus: 500, durationMs: 12, error: 'HTTP 500', responseExcerpt: 'x'.repeat(1024) }],
      }),
    ).toEqual({
      delivery_id: 'd1',
      event_id: 'e1',
      event: 'order.paid',
      url: 'https://shop.test/n',
      status: 'failed',
      attempts: [{ at: Math.floor(at.getTime() / 1000), http_status: 500, duration_ms: 12, error: 'HTTP 500', response_excerpt: 'x'.repeat(256) }],
    });
  });
});

describe('merchantFacingError (issue 29)', () => {
  it("shows a stored text that carried our own failure's message as the fixed text, and every other text as it is", () => {
    expect(merchantFacingError('not sent: its nonce could not be recorded (connect ECONNREFUSED 10.0.0.5:6379)')).toBe(INTERNAL_FAILURE_TEXT);
    for (const text of ['HTTP 500', 'ECONNREFUSED: connect ECONNREFUSED 203.0.113.9:443', INTERNAL_FAILURE_TEXT, null])
      expect(merchantFacingError(text)).toBe(text);
  });
});
