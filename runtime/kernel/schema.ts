/**
 * Schemas (seed 003 "Schema 与解析"): a `SchemaAdapter` has a read-only JSON Schema (what a model
 * sees) and a synchronous `parse` (what the runtime trusts). zod is the default way to make one.
 */
import { z } from 'zod';
import { HarnessError, type Issue } from './errors.ts';
import { deepFreeze } from './freeze.ts';

/** A JSON Schema document (seed 003 `JsonSchema`), read-only; what the model sees of a tool's input. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** Seed 003 `SchemaAdapter`: a JSON Schema for the model plus a synchronous `parse` (see `zodSchema`). */
export interface SchemaAdapter<Value> {
  readonly jsonSchema: JsonSchema;
  /**
   * Validates and converts, synchronously.
   * @throws HarnessError `INVALID_INPUT` with `issues` (code, message, path) when the input is invalid.
   */
  parse(input: unknown): Value;
}

/** A SchemaAdapter from a zod schema; the JSON Schema comes from zod's own `toJSONSchema`. */
export function zodSchema<S extends z.ZodType>(schema: S): SchemaAdapter<z.output<S>> {
  const { $schema: _ignored, ...jsonSchema } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return {
    jsonSchema: deepFreeze(jsonSchema),
    parse(input) {
      const result = schema.safeParse(input);
      if (result.success) return result.data;
      const issues: Issue[] = result.error.issues.map((issue) => ({
        code: issue.code.toUpperCase(),
        message: issue.message,
        path: issue.path.filter((p): p is string | number => typeof p !== 'symbol'),
      }));
      throw new HarnessError('INVALID_INPUT', formatIssues(issues), { issues });
    },
  };
}

export function isSchemaAdapter(value: unknown): value is SchemaAdapter<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as SchemaAdapter<unknown>).parse === 'function' && typeof (value as SchemaAdapter<unknown>).jsonSchema === 'object';
}

/** "path: message" lines, one per issue. */
export function formatIssues(issues: readonly Issue[]): string {
  return issues.map((issue) => `${issue.path?.length ? issue.path.join('.') : '(input)'}: ${issue.message}`).join('\n');
}
