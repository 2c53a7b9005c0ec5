/**
 * Lossless JSON (DESIGN "Sessions and the journal": appending validates that data is lossless JSON).
 *
 * A journal record must read back exactly as it was appended, so event data may only hold values
 * that survive `JSON.stringify` → `JSON.parse` unchanged: `null`, booleans, finite numbers other
 * than `-0`, strings, arrays and plain objects (prototype `Object.prototype` or `null`). Rejected,
 * with the JSON path of the first offending value: `undefined` (as an object value or array item;
 * a hole in an array reads as `undefined`), `NaN`, `±Infinity`, `-0`, BigInt, functions, symbols,
 * cycles, and class instances (`Date`, `Map`, `Error`, `Uint8Array`, …).
 *
 * This runs once per stream chunk: shallow values (depth ≤ 24, e.g. a chunk record) go through a
 * small recursive walk that allocates nothing; anything else — and anything that walk cannot vouch
 * for — goes through an iterative walk (no recursion, no JSON round trip, no allocation per
 * primitive) that finds and names the problem; the path string is only built when something is wrong.
 * A value shared by two branches (a DAG) is fine — only a value inside itself is a cycle.
 */
import { HarnessError } from '../kernel/errors.ts';

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** Below this depth a cycle is found by scanning the path; deeper, a Set of the path is kept. */
const SCAN_DEPTH = 64;

/**
 * Throws unless `value` is lossless JSON.
 * @param root the name the path starts with, e.g. `data` → `data.message.content[2].text`.
 * @param freeze when the whole value is valid, freeze every object and array in it (a deep freeze
 *   fused into the same walk; already-frozen parts are walked but not re-frozen). When it is not,
 *   nothing is journaled, but parts of it found valid before the problem may have been frozen.
 * @throws HarnessError `INVALID_EVENT_DATA` naming the path and what was found there.
 */
export function assertLosslessJson(value: unknown, root = 'data', freeze = false): void {
  // The hot path: shallow plain data (a stream chunk record) is checked by a small recursive walk
  // that allocates nothing; anything it cannot vouch for (a problem, a cycle, depth past
  // FAST_DEPTH) goes through the full walk below, which finds and names the problem.
  if (freeze ? fastValidFreeze(value, 0) : fastValid(value, 0)) return;
  const problem = primitiveProblem(value);
  if (problem === null) return;
  if (problem !== undefined) throw invalid(root, problem);
  const top = value as object;
  const topKind = containerKind(top);
  if (topKind === undefined) throw invalid(root, describeInstance(top));
  // The depth-first stack is the path: objects[d] was reached from objects[d - 1] by keyOf[d].
  const objects: object[] = [top];
  const keyLists: (string[] | null)[] = [topKind === 'array' ? null : Object.keys(top)];
  const next: number[] = [0];
  const keyOf: (string | number)[] = [root];
  const toFreeze: object[] | undefined = freeze ? [top] : undefined;
  let onPath: Set<object> | undefined;
  let depth = 0;
  while (depth >= 0) {
    const current = objects[depth]!;
    const keys = keyLists[depth]!;
    const at = next[depth]!;
    let key: string | number;
    let child: unknown;
    if (keys === null) {
      if (at >= (current as unknown[]).length) {
        if (depth === SCAN_DEPTH) onPath = undefined;
        else if (onPath !== undefined) onPath.delete(current);
        depth--;
        continue;
      }
      key = at;
      child = (current as unknown[])[at];
    } else {
      if (at >= keys.length) {
        if (depth === SCAN_DEPTH) onPath = undefined;
        else if (onPath !== undefined) onPath.delete(current);
        depth--;
        continue;
      }
      key = keys[at]!;
      child = (current as Record<string, unknown>)[key];
    }
    next[depth] = at + 1;
    const childProblem = primitiveProblem(child);
    if (childProblem === null) continue;
    if (childProblem !== undefined) throw invalid(pathOf(keyOf, depth, key), childProblem);
    const object = child as object;
    const kind = containerKind(object);
    if (kind === undefined) throw invalid(pathOf(keyOf, depth, key), describeInstance(object));
    const childDepth = depth + 1;
    if (childDepth < SCAN_DEPTH) {
      for (let d = 0; d <= depth; d++) if (objects[d] === object) throw invalid(pathOf(keyOf, depth, key), 'a cycle (this object contains itself)');
    } else {
      onPath ??= new Set(objects.slice(0, childDepth));
      if (onPath.has(object)) throw invalid(pathOf(keyOf, depth, key), 'a cycle (this object contains itself)');
      onPath.add(object);
    }
    objects[childDepth] = object;
    keyLists[childDepth] = kind === 'array' ? null : Object.keys(object);
    next[childDepth] = 0;
    keyOf[childDepth] = key;
    toFreeze?.push(object);
    depth = childDepth;
  }
  if (toFreeze !== undefined) for (let i = 0; i < toFreeze.length; i++) if (!Object.isFrozen(toFreeze[i]!)) Object.freeze(toFreeze[i]!);
}

/** Depth the fast walk goes to; deeper values (and cycles) take the full walk. */
const FAST_DEPTH = 24;
/**
 * The own-key test of the fast walks' for-in: V8 optimises `hasOwnProperty.call(object, key)` with
 * the for-in key (the enum cache answers it), not `Object.hasOwn` — a delta chunk record's walk
 * 118 → 68 ns (Node 20).
 */
const hasOwn = Object.prototype.hasOwnProperty;

/**
 * True when `value` is lossless JSON no deeper than FAST_DEPTH (the same rules as the full walk:
 * own enumerable string keys of plain objects, every index of arrays). False means "not sure":
 * the caller runs the full walk.
 */
function fastValid(value: unknown, depth: number): boolean {
  const problem = primitiveProblem(value);
  if (problem !== undefined) return problem === null;
  if (depth >= FAST_DEPTH) return false;
  const kind = containerKind(value as object);
  if (kind === 'array') {
    const array = value as unknown[];
    for (let i = 0; i < array.length; i++) if (!fastValid(array[i], depth + 1)) return false;
    return true;
  }
  if (kind === undefined) return false;
  for (const key in value as object) {
    if (!hasOwn.call(value, key)) continue; // what Object.keys (the full walk) would not see
    if (!fastValid((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

/**
 * {@link fastValid} and the deep freeze in one walk (one walk per chunk record, not two): each
 * object or array is frozen once everything in it was found valid (frozen parts are walked, not
 * re-frozen).
 */
function fastValidFreeze(value: unknown, depth: number): boolean {
  const problem = primitiveProblem(value);
  if (problem !== undefined) return problem === null;
  if (depth >= FAST_DEPTH) return false;
  const kind = containerKind(value as object);
  if (kind === 'array') {
    const array = value as unknown[];
    for (let i = 0; i < array.length; i++) if (!fastValidFreeze(array[i], depth + 1)) return false;
  } else {
    if (kind === undefined) return false;
    for (const key in value as object) {
      if (!hasOwn.call(value, key)) continue;
      if (!fastValidFreeze((value as Record<string, unknown>)[key], depth + 1)) return false;
    }
  }
  if (!Object.isFrozen(value)) Object.freeze(value);
  return true;
}

/** True when `value` is lossless JSON (see {@link assertLosslessJson}). */
export function isLosslessJson(value: unknown): boolean {
  try {
    assertLosslessJson(value);
    return true;
  } catch {
    return false;
  }
}

/** `null` for a valid primitive, a reason for an invalid one, `undefined` for an object to walk. */
function primitiveProblem(value: unknown): string | null | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      if (Number.isNaN(value)) return 'NaN';
      if (value === Infinity || value === -Infinity) return String(value);
      if (value === 0 && 1 / value < 0) return '-0 (JSON writes it as 0)';
      return null;
    case 'object':
      return value === null ? null : undefined;
    case 'undefined':
      return 'undefined (JSON drops it; leave the key out instead)';
    case 'bigint':
      return 'a BigInt';
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    default:
      return `a ${typeof value}`;
  }
}

function containerKind(value: object): 'array' | 'object' | undefined {
  if (Array.isArray(value)) return 'array';
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null ? 'object' : undefined;
}

function describeInstance(value: object): string {
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return `an instance of ${typeof name === 'string' && name ? name : 'a class'} (only plain objects and arrays are JSON)`;
}

function pathOf(keyOf: readonly (string | number)[], depth: number, last: string | number): string {
  let path = String(keyOf[0]);
  const part = (key: string | number): string => (typeof key === 'number' ? `[${key}]` : IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`);
  for (let d = 1; d <= depth; d++) path += part(keyOf[d]!);
  return path + part(last);
}

function invalid(path: string, found: string): HarnessError {
  return new HarnessError('INVALID_EVENT_DATA', `Event data is not lossless JSON: ${path} is ${found}.`, { details: { path } });
}
