/**
 * Deep freezing (seed 002 14.4: "deepFreeze 迭代防环、跳过 AbortSignal").
 *
 * Iterative (no recursion, so a deep message tree cannot overflow the stack) and cycle-safe.
 * Only plain data is frozen: plain objects, arrays and null-prototype objects. Everything else —
 * an `AbortSignal` (freezing it would break cancellation), class instances such as an adapter or an
 * SDK client (seed 003: instances with methods are not frozen), typed arrays, Maps and Sets — is left
 * alone, as are its contents. An object that is already frozen is taken to be frozen deeply (all
 * this runtime freezes, it freezes deeply), so re-freezing a message built from frozen blocks is cheap.
 */
export type DeepReadonly<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends AbortSignal
    ? T
    : T extends readonly (infer U)[]
      ? readonly DeepReadonly<U>[]
      : T extends object
        ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
        : T;

export function deepFreeze<T>(value: T): T {
  if (!isFreezable(value)) return value;
  const stack: object[] = [value as object];
  // No visited set (one per call is most of a small message's freeze cost): an object is frozen
  // when first taken off the stack and a frozen one is never pushed or walked again, so a cycle or
  // a shared child ends there. The root alone is walked even when frozen (a frozen shell may hold
  // unfrozen children).
  let root = true;
  while (stack.length > 0) {
    const current = stack.pop()!;
    if (root) root = false;
    else if (Object.isFrozen(current)) continue;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const item: unknown = current[i];
        if (isFreezable(item) && !Object.isFrozen(item)) stack.push(item);
      }
    } else {
      for (const key in current) {
        const item = (current as Record<string, unknown>)[key];
        if (isFreezable(item) && !Object.isFrozen(item)) stack.push(item);
      }
    }
    Object.freeze(current);
  }
  return value;
}

/** Plain data only: arrays and objects whose prototype is Object.prototype or null. */
export function isPlainData(value: unknown): value is object {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function isFreezable(value: unknown): value is object {
  return isPlainData(value);
}
