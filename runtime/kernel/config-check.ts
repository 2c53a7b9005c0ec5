/**
 * Checking a config against its zod schema (DESIGN "The kernel": a bad config is `INVALID_CONFIG`
 * naming the plugin and the path; seed 003 "Schema 与解析", `checkX` → issues).
 *
 * Unknown keys are errors, never silently dropped — a misspelt key (`plugns`, `maxDepht`) would
 * otherwise leave its setting at the default without a word. A `z.strictObject`'s unknown keys are
 * zod's own issues; a plain `z.object`'s, which zod strips, are found by walking the input along
 * the schema, so every object of a config is checked as strict. `z.looseObject` (or `.catchall()`)
 * is how a schema accepts keys it does not list. Each unknown key is one `UNKNOWN_KEY` issue whose
 * path ends at the key, with "did you mean" the closest key that object knows.
 */
import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { HarnessError, type Issue } from './errors.ts';
import { locateKey, type SourcePosition } from './key-location.ts';

/** What {@link checkConfig} found: the parsed value, or at least one issue. */
export type ConfigCheck<Value> = { readonly status: 'passed'; readonly value: Value; readonly issues: readonly [] } | { readonly status: 'failed'; readonly issues: readonly Issue[] };

/**
 * Parses `input` with `schema` and reports every problem as an {@link Issue} with its path: one
 * `UNKNOWN_KEY` per unknown key, strict object or not (these first), then zod's other issues (their
 * codes upper-cased).
 */
export function checkConfig<Value>(schema: z.ZodType<Value>, input: unknown): ConfigCheck<Value> {
  // zod's issue for a strict object's unknown keys carries the keys but not the known ones; its
  // error map sees the object schema that raised it, so the known keys are kept by that array.
  const knownOf = new WeakMap<object, readonly string[]>();
  const result = schema.safeParse(input, {
    error: (issue) => {
      if (issue.code === 'unrecognized_keys') {
        const shape = (issue.inst as { _zod?: { def?: { shape?: object } } } | undefined)?._zod?.def?.shape;
        if (shape !== undefined) knownOf.set(issue.keys, Object.keys(shape));
      }
      return undefined;
    },
  });
  const issues: Issue[] = result.success ? [] : result.error.issues.flatMap((issue) => issuesOf(issue, [], knownOf));
  strippedKeys(schema, input, [], issues, 0);
  // Unknown keys first: a misspelt key is often why a required one is missing (`plugns` → no `plugins`).
  issues.sort((a, b) => Number(b.code === 'UNKNOWN_KEY') - Number(a.code === 'UNKNOWN_KEY'));
  if (issues.length === 0 && result.success) return { status: 'passed', value: result.data, issues: [] };
  return { status: 'failed', issues: issues.length ? issues : [{ code: 'INVALID_CONFIG', message: 'invalid config', path: [] }] };
}

/**
 * The key of `candidates` closest to `word` by edit distance (letters swapped count as one edit;
 * case is ignored), or undefined when none is close: at most one edit per three letters, at least
 * one. For "did you mean" in messages (`plugns` → `plugins`, `maxDepht` → `maxDepth`).
 */
export function closestName(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.max(1, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    if (candidate === word) continue;
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** The message of an unknown key's issue: "unknown key; did you mean `x`?" when one is close, else the keys known there (when known). */
export function unknownKeyMessage(key: string, known: readonly string[] | undefined): string {
  if (known === undefined) return 'unknown key';
  const suggestion = closestName(key, known);
  if (suggestion !== undefined) return `unknown key; did you mean \`${suggestion}\`?`;
  if (known.length === 0) return 'unknown key (this object takes no keys)';
  return `unknown key (known here: ${known.slice(0, 12).join(', ')}${known.length > 12 ? ', …' : ''})`;
}

type ZodIssue = z.core.$ZodIssue;

/** One zod issue as Issues: unknown keys one each, a union that failed only on unknown keys as those. */
function issuesOf(issue: ZodIssue, prefix: readonly PropertyKey[], knownOf: WeakMap<object, readonly string[]>): Issue[] {
  const path = [...prefix, ...issue.path].filter((p): p is string | number => typeof p !== 'symbol');
  if (issue.code === 'unrecognized_keys') {
    const known = knownOf.get(issue.keys);
    return issue.keys.map((key) => ({ code: 'UNKNOWN_KEY', message: unknownKeyMessage(key, known), path: [...path, key] }));
  }
  if (issue.code === 'invalid_union') {
    // The one option that matched but for unknown keys: those keys are what is wrong.
    const nearly = issue.errors.filter((option) => option.length > 0 && option.every((inner) => inner.code === 'unrecognized_keys'));
    if (nearly.length === 1) return nearly[0]!.flatMap((inner) => issuesOf(inner, path, knownOf));
  }
  return [{ code: issue.code.toUpperCase(), message: issue.message, path }];
}

/** The parts of a zod (v4) schema definition the walk reads. */
interface SchemaDef {
  readonly type?: string;
  readonly shape?: Readonly<Record<string, unknown>>;
  readonly catchall?: unknown;
  readonly innerType?: unknown;
  readonly in?: unknown;
  readonly element?: unknown;
  readonly valueType?: unknown;
  readonly items?: readonly unknown[];
  readonly rest?: unknown;
  readonly options?: readonly unknown[];
  readonly getter?: () => unknown;
}

const defOf = (schema: unknown): SchemaDef | undefined => (schema as { _zod?: { def?: SchemaDef } } | undefined)?._zod?.def;
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Adds an `UNKNOWN_KEY` issue for each key of `value` that a plain `z.object` of `schema` does not
 * list (zod strips those silently). Descends only where the schema says what is there: objects,
 * arrays, records, tuples, wrappers (optional, default, pipe input…), lazy schemas, and the first
 * union option that accepts the value; an intersection or anything else is not looked into, so no
 * key is ever reported that the schema would have used.
 */
function strippedKeys(schema: unknown, value: unknown, path: (string | number)[], issues: Issue[], depth: number): void {
  const def = defOf(schema);
  if (def === undefined || depth > 64 || value === undefined || value === null) return;
  switch (def.type) {
    case 'object': {
      if (!isRecord(value)) return;
      const shape = def.shape ?? {};
      const catchall = def.catchall;
      for (const key of Object.keys(value)) {
        if (Object.hasOwn(shape, key)) strippedKeys(shape[key], value[key], [...path, key], issues, depth + 1);
        else if (catchall === undefined) issues.push({ code: 'UNKNOWN_KEY', message: unknownKeyMessage(key, Object.keys(shape)), path: [...path, key] });
        else if (defOf(catchall)?.type !== 'never') strippedKeys(catchall, value[key], [...path, key], issues, depth + 1);
      }
      return;
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return strippedKeys(def.innerType, value, path, issues, depth + 1);
    case 'pipe':
      return strippedKeys(def.in, value, path, issues, depth + 1);
    case 'lazy':
      return strippedKeys(def.getter?.(), value, path, issues, depth + 1);
    case 'array':
      if (Array.isArray(value)) for (const [index, item] of value.entries()) strippedKeys(def.element, item, [...path, index], issues, depth + 1);
      return;
    case 'tuple':
      if (Array.isArray(value)) for (const [index, item] of value.entries()) strippedKeys(def.items?.[index] ?? def.rest, item, [...path, index], issues, depth + 1);
      return;
    case 'record':
      if (isRecord(value)) for (const key of Object.keys(value)) strippedKeys(def.valueType, value[key], [...path, key], issues, depth + 1);
      return;
    case 'union': {
      const option = def.options?.find((candidate) => (candidate as z.ZodType).safeParse(value).success);
      return strippedKeys(option, value, path, issues, depth + 1);
    }
    default:
      return;
  }
}

/** Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array(rows * cols).fill(0);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(d[(i - 1) * cols + j]! + 1, d[i * cols + j - 1]! + 1, d[(i - 1) * cols + j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, d[(i - 2) * cols + j - 2]! + 1);
      d[i * cols + j] = value;
    }
  }
  return d[rows * cols - 1]!;
}

/**
 * The `INVALID_CONFIG` error for `issues`: `heading`, one `  - path: message` line per issue (with
 * `(file:line:col)` when the config file at `configPath` writes the issue's key exactly once), then
 * `footer`. `details` gains `configPath`, `line` and `column` of the located issue that comes first in the file.
 */
export function invalidConfig(options: { heading: string; issues: readonly Issue[]; footer: string; configPath?: string; details?: Record<string, unknown> }): HarnessError {
  const source = options.configPath === undefined ? undefined : readSource(options.configPath);
  let first: SourcePosition | undefined;
  const lines = options.issues.map((issue) => {
    const key = issue.path?.at(-1);
    const at = source !== undefined && typeof key === 'string' ? locateKey(source, key) : undefined;
    if (at && (first === undefined || at.line < first.line || (at.line === first.line && at.column < first.column))) first = at;
    return `  - ${issue.path?.length ? issue.path.join('.') : '(config)'}: ${issue.message}${at ? ` (${options.configPath}:${at.line}:${at.column})` : ''}`;
  });
  return new HarnessError('INVALID_CONFIG', `${options.heading}\n${lines.join('\n')}\n${options.footer}`, {
    issues: options.issues,
    details: { ...options.details, ...(first ? { configPath: options.configPath, line: first.line, column: first.column } : {}) },
  });
}

/** The text of a config file, or undefined when it cannot be read (then no line is given). */
function readSource(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
