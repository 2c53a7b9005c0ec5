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
 * Lists known to extend one another (appends only): each frozen list of a lineage starts with every
 * item of the lineage's lists made before it, so two lists of one lineage share the shorter one's
 * length. The session's fold registers the surface lists it makes by appending
 * ({@link noteAppended}); a request carries such a list, and comparing it with the previous
 * request's one pointer at a time is O(history) — at 4,000 messages ~100 µs a call on a busy
 * machine, the last per-call cost of a long session that grew with it.
 */
interface Lineage {
  /** The generation of the lineage's newest list: only it may be extended within the lineage (another extension forks). */
  tip: number;
}
/** Per list, its lineage and generation (no reference to another list: a WeakRef would keep a list alive until the job ends). */
const lineages = new WeakMap<readonly unknown[], { readonly lineage: Lineage; readonly generation: number }>();

/**
 * Records that frozen `extended` is frozen `base` with items appended (`extended[i] === base[i]`
 * below `base.length`). Lists neither frozen nor made that way are never recorded.
 */
export function noteAppended<T>(base: readonly T[], extended: readonly T[]): void {
  if (!Object.isFrozen(base) || !Object.isFrozen(extended) || extended.length < base.length) return;
  const known = lineages.get(base);
  if (known !== undefined && known.lineage.tip === known.generation) {
    known.lineage.tip++;
    lineages.set(extended, { lineage: known.lineage, generation: known.lineage.tip });
    return;
  }
  // The base's lineage moved on (or it has none): a new lineage of the two.
  const fresh: Lineage = { tip: 1 };
  lineages.set(base, { lineage: fresh, generation: 0 });
  lineages.set(extended, { lineage: fresh, generation: 1 });
}

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
    const lineage = lineages.get(a)?.lineage;
    if (lineage !== undefined && lineage === lineages.get(b)?.lineage) return Math.min(a.length, b.length);
  }
  const limit = Math.min(a.length, b.length);
  let length = 0;
  while (length < limit && a[length] === b[length]) length++;
  if (frozen) answers.set(b, { a: new WeakRef(a), length });
  return length;
}
