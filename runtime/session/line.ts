/**
 * A journal record's line (DESIGN "Sessions and the journal": one JSON object per line, keys in the
 * order seq, type, atMs, data, ignorable).
 *
 * Most lines of a session are the model's stream deltas, one per chunk. `JSON.stringify` of such a
 * record's data (`{turn, step, chunk: {type, index, text}}`) costs ~1 µs on Node 20, mostly per-call
 * and per-object overhead; {@link deltaData} writes the same characters for data made of known keys
 * holding strings and finite numbers (the whole line: ~1.4 → ~0.6 µs), and hands anything else
 * back to `JSON.stringify`.
 * Same output, byte for byte: test/session/line.test.ts compares the two on generated records.
 */
import type { AnySessionEvent } from './events.ts';

const typeFragments = new Map<string, string>();

/** One record line, without `\n`. Key order: seq, type, atMs, data, ignorable. */
export function eventLine(event: AnySessionEvent): string {
  let fragment = typeFragments.get(event.type);
  if (fragment === undefined) {
    fragment = `,"type":${JSON.stringify(event.type)},"atMs":`;
    if (typeFragments.size < 4096) typeFragments.set(event.type, fragment);
  }
  const atMs = Number.isFinite(event.atMs) ? String(event.atMs) : 'null';
  const data = (event.type === 'assistant/chunk' ? deltaData(event.data) : undefined) ?? JSON.stringify(event.data);
  return `{"seq":${event.seq}${fragment}${atMs},"data":${data}${event.ignorable === true ? ',"ignorable":true}' : '}'}`;
}

/** One record line (with its `\n`), as every store holds it. Key order: seq, type, atMs, data, ignorable. */
export function serializeEvent(event: AnySessionEvent): string {
  return `${eventLine(event)}\n`;
}

/** A string JSON writes as `"…"` unchanged: no quote, backslash, control character or surrogate (a lone one is escaped). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are exactly what JSON escapes.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

function jsonString(value: string): string {
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/** A finite number as JSON writes it (`String` and `JSON.stringify` agree on every finite number, -0 included). */
function isJsonNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** An object `JSON.stringify` writes key by key: no array, no class instance (a `toJSON` on its prototype). */
function isPlainObject(value: unknown): value is object {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * The JSON of an `assistant/chunk` record's data when it is a delta record of the usual shape —
 * own keys `turn`, `step` (numbers) and `chunk`, whose keys are among `type`, `index` (a number),
 * `text`, `id`, `name`, `arguments` (strings) — in its own key order, as `JSON.stringify` writes it;
 * `undefined` for anything else (the caller stringifies it). `for…in` sees the own keys in the order
 * `JSON.stringify` does (none of these keys is an array index) plus inherited enumerable ones, which
 * are not in the list and so send the value to `JSON.stringify`.
 */
function deltaData(data: unknown): string | undefined {
  const record = data as { readonly turn?: unknown; readonly step?: unknown; readonly chunk?: unknown };
  if (!isPlainObject(record)) return undefined;
  let out = '{';
  let count = 0;
  for (const key in record) {
    const value = record[key as keyof typeof record];
    let json: string | undefined;
    if (key === 'turn' || key === 'step') json = isJsonNumber(value) ? String(value) : undefined;
    else if (key === 'chunk') json = deltaChunk(value);
    if (json === undefined) return undefined;
    out += `${count === 0 ? '"' : ',"'}${key}":${json}`;
    count++;
  }
  return `${out}}`;
}

function deltaChunk(chunk: unknown): string | undefined {
  if (!isPlainObject(chunk)) return undefined;
  let out = '{';
  let count = 0;
  for (const key in chunk) {
    const value = (chunk as Record<string, unknown>)[key];
    let json: string;
    switch (key) {
      case 'index':
        if (!isJsonNumber(value)) return undefined;
        json = String(value);
        break;
      case 'type':
      case 'text':
      case 'id':
      case 'name':
      case 'arguments':
        if (typeof value !== 'string') return undefined;
        json = jsonString(value);
        break;
      default:
        return undefined;
    }
    out += `${count === 0 ? '"' : ',"'}${key}":${json}`;
    count++;
  }
  return `${out}}`;
}
