/**
 * The common prefix of two message lists, for what remembers the last request of a conversation and
 * reads only what is new in the next (the replay discipline, the request snapshot, token estimates).
 */

import type { Message } from './types.ts';

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

/**
 * A sum of `measure(message)` over a message list, remembered per conversation (keyed by its first
 * message): a list that starts with the very messages of the last one is summed on from where that
 * one's frozen prefix ended, after {@link sharedPrefixLength}. For what runs at every step over the
 * whole history (token estimates, compaction's size check): reading each message of a long history
 * per step made turns slower as a session grew (issue 16). A message counts as unchanged only while
 * it and its content are frozen; from the first one that is not, the next call measures again.
 *
 * @param measure a message's share of the sum (e.g. its estimated tokens); must depend only on it.
 * @returns a function of a message list to its sum (0 for an empty list).
 */
export function prefixSum(measure: (message: Message) => number): (messages: readonly Message[]) => number {
  const memos = new WeakMap<Message, { messages: readonly Message[]; sums: number[]; trusted: number }>();
  return (messages) => {
    const first = messages[0];
    if (first === undefined) return 0;
    let memo = memos.get(first);
    if (memo === undefined) {
      memo = { messages, sums: [], trusted: 0 };
      memos.set(first, memo);
    }
    const same = Math.min(memo.trusted, sharedPrefixLength(memo.messages, messages));
    const sums = memo.sums;
    sums.length = same;
    let trusted = -1;
    for (let i = same; i < messages.length; i++) {
      const message = messages[i]!;
      if (trusted < 0 && !(Object.isFrozen(message) && Object.isFrozen(message.content))) trusted = i;
      sums.push((i === 0 ? 0 : sums[i - 1]!) + measure(message));
    }
    // A list that is not frozen may change in place: the next comparison needs this one's items.
    memo.messages = Object.isFrozen(messages) ? messages : messages.slice();
    memo.trusted = trusted < 0 ? messages.length : trusted;
    return sums[messages.length - 1]!;
  };
}
