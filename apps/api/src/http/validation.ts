import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { DomainError, type FieldError } from '@app/common';

function flatten(errors: ValidationError[], prefix = ''): FieldError[] {
  return errors.flatMap((e) => {
    const field = prefix ? `${prefix}.${e.property}` : e.property;
    const own = e.constraints ? [{ field, message: Object.values(e.constraints)[0] }] : [];
    return [...own, ...flatten(e.children ?? [], field)];
  });
}

/**
 * DTO validation: one 40000 naming each bad field. Global for @Body/@Query; custom parameter
 * decorators (the signed parameter map) opt in with `forCustomDecorator`.
 */
export function createValidationPipe(forCustomDecorator = false): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    transform: true,
    validateCustomDecorators: forCustomDecorator,
    stopAtFirstError: true,
    exceptionFactory: (errors) => DomainError.invalidFields(flatten(errors)),
  });
}
