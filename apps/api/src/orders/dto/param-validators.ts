import { registerDecorator, type ValidationOptions } from 'class-validator';
import { isHttpUrl, parseYuan } from '@app/common';

/** A string or JSON number matching ^\d{1,10}(\.\d{1,2})?$ and greater than 0 (SPEC 5). */
export function IsYuanAmount(options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isYuanAmount',
      target: target.constructor,
      propertyName: propertyName as string,
      options,
      validator: { validate: (value: unknown) => (parseYuan(value) ?? 0) > 0 },
    });
}

/** http or https, at most 512 characters. */
export function IsHttpUrl(options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isHttpUrl',
      target: target.constructor,
      propertyName: propertyName as string,
      options,
      validator: { validate: (value: unknown) => isHttpUrl(value) },
    });
}
