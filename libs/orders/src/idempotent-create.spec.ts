import { DomainError, ErrorCode, apiMessage } from '@app/common';
import { OUR_NO_ATTEMPTS, createIdempotently, created, differingFields, repeated, requestHash } from './idempotent-create';

const violation = (constraint: string) => Object.assign(new Error('duplicate key'), { code: '23505', constraint });

describe('createIdempotently', () => {
  // Every row here was made by the same request, unless a case says otherwise.
  const constraints = {
    merchantNoConstraint: 'uq_merchant_no',
    ourNoConstraint: 'uq_our_no',
    requestFields: { amount: 100, note: null },
    fieldsOf: () => ({ amount: 100, note: null }),
    conflict: (row: unknown) => ({ message: apiMessage('order.conflict'), first: { order_no: String(row) } }),
  };

  it('answers a repeat from the first row without creating', async () => {
    const create = jest.fn();
    expect(await createIdempotently({ ...constraints, findRepeat: async () => 'first', create })).toEqual({ value: 'first', repeat: true });
    expect(create).not.toHaveBeenCalled();
  });

  it('creates when there is no repeat', async () => {
    expect(await createIdempotently({ ...constraints, findRepeat: async () => null, create: async () => created('new') })).toEqual({
      value: 'new',
      repeat: false,
    });
  });

  it('answers a concurrent repeat that committed first from the winner', async () => {
    const findRepeat = jest.fn().mockResolvedValueOnce(null).mockResolvedValueOnce('winner');
    const create = jest.fn().mockRejectedValue(violation('uq_merchant_no'));
    expect(await createIdempotently({ ...constraints, findRepeat, create })).toEqual({ value: 'winner', repeat: true });
    expect(create).toHaveBeenCalledTimes(1);
  });

  it(`draws our number again on a collision, ${OUR_NO_ATTEMPTS} times at most`, async () => {
    const once = jest.fn().mockRejectedValueOnce(violation('uq_our_no')).mockResolvedValueOnce(created('second draw'));
    expect(await createIdempotently({ ...constraints, findRepeat: async () => null, create: once })).toEqual({ value: 'second draw', repeat: false });
    const always = jest.fn().mockRejectedValue(violation('uq_our_no'));
    await expect(createIdempotently({ ...constraints, findRepeat: async () => null, create: always })).rejects.toMatchObject({ constraint: 'uq_our_no' });
    expect(always).toHaveBeenCalledTimes(OUR_NO_ATTEMPTS);
  });

  it('refuses a repeat made by other parameters (40900) naming the first row and what differs, however it was found, and never compares a new row', async () => {
    const other = { ...constraints, fieldsOf: (row: string) => (row === 'new' ? { amount: 1, note: 'x' } : { amount: 100, note: 'gift' }) };
    const conflict = (first: string) => ({ code: ErrorCode.IdempotencyConflict, data: { order_no: first, differs: ['note'] } });
    await expect(createIdempotently({ ...other, findRepeat: async () => 'first', create: jest.fn() })).rejects.toMatchObject(conflict('first'));
    const winner = jest.fn().mockResolvedValueOnce(null).mockResolvedValueOnce('winner');
    const lost = createIdempotently({ ...other, findRepeat: winner, create: jest.fn().mockRejectedValue(violation('uq_merchant_no')) });
    await expect(lost).rejects.toBeInstanceOf(DomainError);
    await expect(lost).rejects.toMatchObject(conflict('winner'));
    await expect(createIdempotently({ ...other, findRepeat: async () => null, create: async () => repeated('found under the lock') })).rejects.toMatchObject(
      conflict('found under the lock'),
    );
    expect(await createIdempotently({ ...other, findRepeat: async () => null, create: async () => created('new') })).toEqual({ value: 'new', repeat: false });
  });

  it('hands any other error to the caller, a violation of another index included', async () => {
    for (const err of [violation('uq_other'), new Error('channel down')]) {
      const create = jest.fn().mockRejectedValue(err);
      await expect(createIdempotently({ ...constraints, findRepeat: async () => null, create })).rejects.toBe(err);
      expect(create).toHaveBeenCalledTimes(1);
    }
  });
});

describe('differingFields', () => {
  it("lists the request's fields whose values differ from the earlier row's, in the request's order; absent and null are the same", () => {
    expect(differingFields({ b: 2, a: 1, c: null, d: 'x' }, { a: 1, b: 3, d: 'y' })).toEqual(['b', 'd']);
    expect(differingFields({ amount: 100, url: undefined }, { amount: 100, url: null, extra: 'not asked' })).toEqual([]);
    // 1 and "1" are not the same value.
    expect(differingFields({ id: 1 }, { id: '1' })).toEqual(['id']);
  });
});

describe('requestHash', () => {
  it('is the same for the same fields in any order, different for any other value', () => {
    expect(requestHash({ a: 1, b: null })).toBe(requestHash({ b: null, a: 1 }));
    expect(requestHash({ a: 1, b: null })).not.toBe(requestHash({ a: 1, b: 'x' }));
  });
});
