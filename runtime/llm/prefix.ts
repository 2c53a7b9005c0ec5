/**
 * The common prefix of two message lists, for what remembers the last request of a conversation and
 * reads only what is new in the next (the replay discipline, the request snapshot, token estimates).
 */

/**
 * The last answer per (frozen) list `b`: the list it was compared with and the length found. The
 * other list is held weakly: each list's answer names the one before it, and a strong reference
 * would keep every earlier list of a conversation alive.
 */
const answers = new WeakMap<readonly unknown[], { readonly a: WeakRef<readonly unknown[]>; readonly length: number }>();

/**
 * How many leading items `a` and `b` share: `a[i] === b[i]` for every `i` below the result (0 to
 * the shorter length). O(that length) pointer comparisons — no item is read — and O(1) when asked
 * again about the same two frozen lists: a long session's request carries its whole history, and
 * several consumers ask this about the same two lists at each step.
 */
export function sharedPrefixLength<T>(a: readonly T[], b: readonly T[]): number {
  if (a === b) return a.length;
  const frozen = Object.isFrozen(a) && Object.isFrozen(b);
  if (frozen) {
    const known = answers.get(b);
    if (known !== undefined && known.a.deref() === a) return known.length;
  }
  const limit = Math.min(a.length, b.length);
  let length = 0;
  while (length < limit && a[length] === b[length]) length++;
  if (frozen) answers.set(b, { a: new WeakRef(a), length });
  return length;
}
