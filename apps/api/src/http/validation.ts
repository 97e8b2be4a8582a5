import { type ArgumentMetadata, type Type, ValidationPipe, type ValidationError } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { type MetadataStorage, type ValidationArguments, ValidationTypes, getMetadataStorage } from 'class-validator';
import { type ApiMessage, DomainError, type FieldProblem, apiMessage } from '@app/common';
import { RULE_MESSAGE } from './rule-message';

/**
 * One message per field, the one that points to the fix: a missing value (optional ones are
 * skipped before any rule) is "required", not a broken range; otherwise the rule written first
 * on the property, the type check, before the bounds that follow it (class-validator lists the
 * failed constraints bottom-up). Its words come from the rule's context (ruleMessage); a rule
 * written without one keeps class-validator's text in every language.
 */
function fieldProblem(field: string, e: ValidationError): FieldProblem {
  if (e.value === undefined || e.value === null) return { field, message: apiMessage('field.required', { field }) };
  const names = Object.keys(e.constraints ?? {});
  const name = names[names.length - 1];
  const keyed = (e.contexts?.[name] as Record<string, ApiMessage> | undefined)?.[RULE_MESSAGE];
  return { field, message: keyed ?? { key: 'field.unlisted', params: { text: e.constraints![name] } } };
}

function flatten(errors: ValidationError[], prefix = ''): FieldProblem[] {
  return errors.flatMap((e) => {
    const field = prefix ? `${prefix}.${e.property}` : e.property;
    const own = e.constraints ? [fieldProblem(field, e)] : [];
    return [...own, ...flatten(e.children ?? [], field)];
  });
}

type ValidationMetadata = ReturnType<MetadataStorage['getTargetValidationMetadatas']>[number];
type ConstraintMetadata = ReturnType<MetadataStorage['getTargetValidatorConstraints']>[number];

/** class-validator's verdict on an instance (whitelist applied in place), or undefined when it must be asked itself. */
export type Acceptance = (entity: Record<string, unknown>) => boolean | undefined;

interface PropertyRules {
  property: string;
  conditions: ((object: object, value: unknown) => boolean)[];
  checks: { metadata: ValidationMetadata; constraints: ConstraintMetadata[] }[];
}

/**
 * What class-validator decides for `target` under the pipe's options (whitelist, no groups),
 * taken from its own metadata once instead of on every call: the same rules, the same
 * constraint instances, in the same order. Only for classes whose rules are synchronous checks
 * of one property each (conditional ones like IsOptional included): anything else (nested,
 * each, IsDefined, async constraints) gives null, and class-validator is asked every time.
 */
export function compileAcceptance(target: Type<unknown>): Acceptance | null {
  const storage = getMetadataStorage();
  const metadatas = storage.getTargetValidationMetadatas(target, '', false, false, undefined);
  if (metadatas.length === 0) return null;
  const rules: PropertyRules[] = [];
  for (const [property, list] of Object.entries(storage.groupByPropertyName(metadatas))) {
    const rule: PropertyRules = { property, conditions: [], checks: [] };
    for (const metadata of list) {
      if (metadata.type === ValidationTypes.WHITELIST) continue;
      if (metadata.type === ValidationTypes.CONDITIONAL_VALIDATION) {
        rule.conditions.push(metadata.constraints[0] as (object: object, value: unknown) => boolean);
      } else if (metadata.type === ValidationTypes.CUSTOM_VALIDATION && !metadata.each) {
        const constraints = storage.getTargetValidatorConstraints(metadata.constraintCls);
        if (constraints.some((c) => c.async)) return null;
        rule.checks.push({ metadata, constraints });
      } else {
        return null;
      }
    }
    rules.push(rule);
  }
  const known = new Set(rules.map((r) => r.property));

  return (entity) => {
    for (const key of Object.keys(entity)) if (!known.has(key)) delete entity[key];
    for (const { property, conditions, checks } of rules) {
      const value = entity[property];
      if (!conditions.every((condition) => condition(entity, value))) continue;
      for (const { metadata, constraints } of checks) {
        if (metadata.validateIf && !metadata.validateIf(entity, value)) continue;
        const args: ValidationArguments = { targetName: target.name, property, object: entity, value, constraints: metadata.constraints };
        for (const constraint of constraints) {
          const valid: unknown = constraint.instance.validate(value, args);
          if (valid instanceof Promise) return undefined;
          if (!valid) return false;
        }
      }
    }
    return true;
  };
}

/** Keys Nest's pipe strips before class-transformer sees the value; such a value takes Nest's own path. */
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'];

/**
 * Nest's ValidationPipe, with a fast path for flat parameter maps (the signed merchant
 * parameters): class-transformer builds the instance as before and the compiled acceptance
 * (compileAcceptance) stands in for class-validator's per-call work. Anything it does not
 * accept, and any value it was not made for, goes through Nest's pipe unchanged, so every
 * refusal and its message come from class-validator itself.
 */
class CompiledValidationPipe extends ValidationPipe {
  private readonly acceptances = new Map<Type<unknown>, Acceptance | null>();

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    return this.accepted(value, metadata) ?? super.transform(value, metadata);
  }

  private accepted(value: unknown, metadata: ArgumentMetadata): object | undefined {
    const { metatype } = metadata;
    if (!metatype || this.expectedType || !this.isTransformEnabled || !this.toValidate(metadata)) return undefined;
    if (value === null || typeof value !== 'object' || Array.isArray(value) || Buffer.isBuffer(value)) return undefined;
    for (const key of PROTO_KEYS) if (Object.prototype.hasOwnProperty.call(value, key)) return undefined;
    for (const item of Object.values(value)) if (typeof item === 'object' && item !== null) return undefined;
    let accept = this.acceptances.get(metatype);
    if (accept === undefined) {
      accept = compileAcceptance(metatype);
      this.acceptances.set(metatype, accept);
    }
    if (!accept) return undefined;
    const entity = plainToInstance(metatype, value, this.transformOptions) as Record<string, unknown>;
    if (entity === null || typeof entity !== 'object' || entity.constructor !== metatype) return undefined;
    return accept(entity) === true ? entity : undefined;
  }
}

/**
 * DTO validation: one 40000 naming each bad field. Global for @Body/@Query; custom parameter
 * decorators (the signed parameter map) opt in with `forCustomDecorator`.
 */
export function createValidationPipe(forCustomDecorator = false): ValidationPipe {
  return new CompiledValidationPipe({
    whitelist: true,
    transform: true,
    validateCustomDecorators: forCustomDecorator,
    exceptionFactory: (errors) => DomainError.invalidFields(flatten(errors)),
  });
}
