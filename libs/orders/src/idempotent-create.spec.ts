import { OUR_NO_ATTEMPTS, createIdempotently, created, requestHash } from './idempotent-create';

const violation = (constraint: string) => Object.assign(new Error('duplicate key'), { code: '23505', constraint });

describe('createIdempotently', () => {
  const constraints = { merchantNoConstraint: 'uq_merchant_no', ourNoConstraint: 'uq_our_no' };

  it('answers a repeat from the first row without creating', async () => {
    const create = jest.fn();
    expect(await createIdempotently({ ...constraints, findRepeat: async () => 'first', create })).toEqual({ value: 'first', repeat: true });
    expect(create).not.toHaveBeenCalled();
  });

  it('creates when there is no repeat', async () => {
    expect(await createIdempotently({ ...constraints, findRepeat: async () => null, create: async () => created('new') })).toEqual({ value: 'new', repeat: false });
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

  it('hands any other error to the caller, a violation of another index included', async () => {
    for (const err of [violation('uq_other'), new Error('channel down')]) {
      const create = jest.fn().mockRejectedValue(err);
      await expect(createIdempotently({ ...constraints, findRepeat: async () => null, create })).rejects.toBe(err);
      expect(create).toHaveBeenCalledTimes(1);
    }
  });
});

describe('requestHash', () => {
  it('is the same for the same fields in any order, different for any other value', () => {
    expect(requestHash({ a: 1, b: null })).toBe(requestHash({ b: null, a: 1 }));
    expect(requestHash({ a: 1, b: null })).not.toBe(requestHash({ a: 1, b: 'x' }));
  });
});
