import 'reflect-metadata';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { type ArgumentMetadata, type Type, ValidationPipe } from '@nestjs/common';
import { ValidationTypes, getMetadataStorage } from 'class-validator';
import fc from 'fast-check';
import { type ApiMessage, DomainError, renderApiMessage } from '@app/common';
import { en } from '@app/common/api-messages/en';
import { CallbackResendDto } from '../callbacks/dto/callback-resend.dto';
import { GetPayChannelsDto } from '../channels/dto/get-pay-channels.dto';
import { CreateOrderDto } from '../orders/dto/create-order.dto';
import { OrderQueryDetailDto } from '../orders/dto/order-query-detail.dto';
import { OrderQueryListDto } from '../orders/dto/order-query-list.dto';
import { RULE_MESSAGE } from './rule-message';
import { compileAcceptance, createValidationPipe } from './validation';

const DTOS = [CreateOrderDto, OrderQueryListDto, OrderQueryDetailDto, GetPayChannelsDto, CallbackResendDto];
const KEYS = [
  'order_type',
  'cny_amount',
  'paychannel_id',
  'paychannel_paymethod',
  'customer_name',
  'notify_url',
  'merchant_order_no',
  'page',
  'limit',
  'status',
  'start_time',
  'end_time',
  'category',
  'order_no',
  'api_key',
  'nonce',
  'timestamp',
  'signature',
  'extra',
];

/** Scalars a merchant could send (what mergeRequestParams lets through), biased towards the edges of each rule. */
const scalar = fc.oneof(
  fc.constantFrom(null, '', true, false, 0, 1, 2, -1, 1.5, 100, 2147483647, 2147483648, 1e21, Number.MAX_SAFE_INTEGER),
  fc.constantFrom('1', '2', '0', '-1', '01', ' 1', '1e3', '100.00', '100.5', '0.00', '0.001', '12345678901.00', 'abc', '张三', 'x'.repeat(65)),
  fc.constantFrom('alipay', 'wxpay', 'bank', 'ALIPAY', 'pending', 'paid', 'completed', 'processor', 'remotepay', 'warehouse'),
  fc.constantFrom('M-1', 'M 1', 'https://shop.example/n', 'ftp://x.example', 'http://', `https://x.example/${'a'.repeat(600)}`),
  fc.string({ maxLength: 70 }),
  fc.integer(),
  fc.double(),
);
const params = fc.dictionary(fc.constantFrom(...KEYS), scalar, { maxKeys: 10 });
/** A valid request of each DTO, so that acceptance (where a wrong answer would let bad input in) is exercised too. */
const VALID: Record<string, Record<string, unknown>> = {
  CreateOrderDto: {
    order_type: 1,
    cny_amount: '100.00',
    paychannel_id: 3,
    paychannel_paymethod: 'alipay',
    customer_name: '张三',
    notify_url: 'https://shop.example/n',
    merchant_order_no: 'M-1',
  },
  OrderQueryListDto: { page: '2', limit: 50, status: 'paid', order_type: '1', start_time: 0, end_time: '1763700000' },
  OrderQueryDetailDto: { order_no: '2026010100000012345678' },
  GetPayChannelsDto: { category: 'processor' },
  CallbackResendDto: { order_no: '2026010100000012345678' },
};
const nearlyValid = (dto: Type<unknown>) =>
  fc.tuple(fc.dictionary(fc.constantFrom(...KEYS), scalar, { maxKeys: 2 }), fc.subarray(Object.keys(VALID[dto.name]))).map(([changes, dropped]) => {
    const value: Record<string, unknown> = { ...VALID[dto.name], ...changes };
    for (const key of dropped.slice(0, 1)) delete value[key];
    return value;
  });

type Outcome = { accepted: object; type: string } | { refused: unknown };

async function outcome(pipe: ValidationPipe, value: Record<string, unknown>, metatype: Type<unknown>): Promise<Outcome> {
  const metadata: ArgumentMetadata = { type: 'custom', metatype, data: undefined };
  // Each pipe gets its own copy: Nest's pipe and the whitelist change what they are given.
  const copy = Object.assign(Object.create(null) as Record<string, unknown>, value);
  try {
    const accepted = (await pipe.transform(copy, metadata)) as object;
    return { accepted: { ...accepted }, type: accepted.constructor.name };
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return { refused: { code: err.code, message: err.message, data: err.data } };
  }
}

describe("the compiled validation pipe answers exactly as Nest's ValidationPipe with class-validator", () => {
  const reference = new ValidationPipe({
    whitelist: true,
    transform: true,
    validateCustomDecorators: true,
    exceptionFactory: (errors) => (createValidationPipe(true) as unknown as { exceptionFactory: (e: unknown) => unknown }).exceptionFactory(errors),
  });
  const compiled = createValidationPipe(true);

  it('compiles every merchant DTO (so the fast path is what the requests take)', () => {
    for (const dto of DTOS) expect([dto.name, compileAcceptance(dto) === null]).toEqual([dto.name, false]);
  });

  it.each(DTOS.map((dto) => [dto.name, dto] as const))('%s: same instance or same refusal for any flat parameter map', async (_name, dto) => {
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(params, nearlyValid(dto)), async (value) => {
        const expected = await outcome(reference, value, dto);
        if ('accepted' in expected) accepted++;
        expect(await outcome(compiled, value, dto)).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
    // Both answers were exercised.
    expect(accepted).toBeGreaterThan(100);
    expect(accepted).toBeLessThan(2900);
  });

  it('takes the fast path for a valid request: class-validator is not called', async () => {
    const slow = jest.spyOn(ValidationPipe.prototype, 'transform');
    const value = { order_type: '1', cny_amount: '100.00', paychannel_id: 3, paychannel_paymethod: 'alipay', api_key: 'mk_x', nonce: 'abcdefgh' };
    const result = await outcome(compiled, value, CreateOrderDto);
    expect(result).toEqual({ accepted: { order_type: 1, cny_amount: '100.00', paychannel_id: 3, paychannel_paymethod: 'alipay' }, type: 'CreateOrderDto' });
    expect(slow).not.toHaveBeenCalled();
    // A refusal is class-validator's own.
    expect(await outcome(compiled, { ...value, paychannel_id: 0 }, CreateOrderDto)).toMatchObject({ refused: { message: 'paychannel_id must be at least 1' } });
    expect(slow).toHaveBeenCalledTimes(1);
    slow.mockRestore();
  });
});

describe('every rule of every merchant DTO has its words in the tables (SPEC 2)', () => {
  /** Every DTO class under apps/api/src/<module>/dto, loaded so class-validator knows its rules. */
  function merchantDtos(): Type<unknown>[] {
    const src = join(__dirname, '..');
    const classes: Type<unknown>[] = [];
    for (const module of readdirSync(src)) {
      const folder = join(src, module, 'dto');
      if (!existsSync(folder)) continue;
      for (const file of readdirSync(folder).filter((f) => f.endsWith('.dto.ts'))) {
        for (const value of Object.values(require(join(folder, file)) as Record<string, unknown>)) {
          if (typeof value === 'function' && /Dto$/.test(value.name)) classes.push(value as Type<unknown>);
        }
      }
    }
    return classes;
  }

  it('names a key of the tables in each rule, so msg can be Chinese', () => {
    const storage = getMetadataStorage();
    const dtos = merchantDtos();
    expect(dtos.length).toBeGreaterThanOrEqual(14);
    for (const dto of dtos) {
      for (const rule of storage.getTargetValidationMetadatas(dto, '', false, false, undefined)) {
        if (rule.type === ValidationTypes.CONDITIONAL_VALIDATION || rule.type === ValidationTypes.WHITELIST) continue;
        const keyed = (rule.context as Record<string, ApiMessage> | undefined)?.[RULE_MESSAGE];
        expect([dto.name, rule.propertyName, keyed !== undefined && keyed.key in en]).toEqual([dto.name, rule.propertyName, true]);
        // The English words in data.errors are the table's.
        expect([dto.name, rule.propertyName, rule.message]).toEqual([dto.name, rule.propertyName, renderApiMessage(keyed!, 'en')]);
      }
    }
  });

  it("answers a refusal with the table's Chinese in msg and the English in data", async () => {
    const pipe = createValidationPipe(true);
    const refused = await pipe.transform({ order_type: 1, cny_amount: 'abc', paychannel_id: 0 }, { type: 'custom', metatype: CreateOrderDto }).catch((e) => e);
    expect(refused).toBeInstanceOf(DomainError);
    expect((refused as DomainError).msgIn('zh-CN')).toBe(
      'cny_amount 须为大于 0 的金额（单位：元），最多两位小数，例如 "100.00"；paychannel_id 不能小于 1；paychannel_paymethod 不能为空',
    );
    expect((refused as DomainError).data).toEqual({
      errors: [
        { field: 'cny_amount', message: 'cny_amount must be a yuan amount greater than 0 with at most 2 decimals, like "100.00"' },
        { field: 'paychannel_id', message: 'paychannel_id must be at least 1' },
        { field: 'paychannel_paymethod', message: 'paychannel_paymethod is required' },
      ],
    });
  });
});
