/**
 * Live tails of session events, one per session per process, shared by all its subscribers
 * (`TurnService.events`). A session's tail merges, by seq, two sources of stored events: the
 * store's own tail (what any process stored, from the seq the first subscriber asked for) and the
 * batches this process's journals have written (`session/written`). Every subscriber has its own
 * cursor and queue: the tail passes each event on to every queue synchronously, never waiting for
 * a consumer, so a slow consumer slows neither the others nor the writer; a queue past its bound
 * is closed (`overflowed`; an SSE client then reconnects with Last-Event-ID). A subscriber that
 * asks for events the shared tail has passed on already gets them from the tail's recent events,
 * or else catches up through a tail of its own that stops once it has reached the shared one.
 * The tail starts with the first subscriber and stops after the last.
 */
import type { AnySessionEvent } from '../../runtime/index.ts';

/** A one-consumer async queue of events with a close, bounded by `maxQueued` (default unbounded). */
export class EventQueue implements AsyncIterableIterator<AnySessionEvent> {
  private buffer: AnySessionEvent[] = [];
  private head = 0;
  private waiting: ((result: IteratorResult<AnySessionEvent>) => void) | null = null;
  private readonly closing = new AbortController();
  private overflow = false;
  private readonly onReturn: () => void;
  private readonly maxQueued: number;

  constructor(onReturn: () => void, options: { maxQueued?: number } = {}) {
    this.onReturn = onReturn;
    this.maxQueued = options.maxQueued ?? Number.POSITIVE_INFINITY;
  }

  /** Queues an event; past `maxQueued` unread events the queue drops them and closes (`overflowed`). */
  push(event: AnySessionEvent): void {
    if (this.closing.signal.aborted) return;
    const waiting = this.waiting;
    if (waiting !== null) {
      this.waiting = null;
      waiting({ value: event, done: false });
      return;
    }
    if (this.buffer.length - this.head >= this.maxQueued) {
      this.overflow = true;
      this.buffer = [];
      this.head = 0;
      this.close();
      return;
    }
    this.buffer.push(event);
  }

  close(): void {
    if (this.closing.signal.aborted) return;
    this.closing.abort();
    this.onReturn();
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<AnySessionEvent>> {
    if (this.head < this.buffer.length) {
      const value = this.buffer[this.head++]!;
      if (this.head === this.buffer.length) {
        this.buffer = [];
        this.head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.closing.signal.aborted) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.waiting = resolve));
  }

  /** Takes every event already queued, without waiting (a writer batches them into one write). */
  drain(): AnySessionEvent[] {
    if (this.head >= this.buffer.length) return [];
    const out = this.head === 0 ? this.buffer : this.buffer.slice(this.head);
    this.buffer = [];
    this.head = 0;
    return out;
  }

  get isClosed(): boolean {
    return this.closing.signal.aborted;
  }

  /** Aborted when the queue closes (a consumer waiting for something else wakes up). */
  get closed(): AbortSignal {
    return this.closing.signal;
  }

  /** True when the queue closed because its consumer fell more than `maxQueued` events behind. */
  get overflowed(): boolean {
    return this.overflow;
  }

  /** Events already queued (to drain without waiting). */
  get queued(): number {
    return this.buffer.length - this.head;
  }

  return(): Promise<IteratorResult<AnySessionEvent>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** Where a session's stored events come from. */
export interface TailSources {
  /** The stored events of session `id` after `afterSeq`, then each new one, until `signal` aborts. */
  tail(id: string, afterSeq: number, signal: AbortSignal): AsyncIterable<AnySessionEvent>;
  /** The stored events of session `id` after `afterSeq` (one read, to the end). */
  read(id: string, afterSeq: number): AsyncIterable<AnySessionEvent>;
  /** A source failed (the subscribers it fed are closed: they reconnect). */
  failed?(id: string, error: unknown): void;
}

/** Events a tail keeps after passing them on, for subscribers that join a little behind it. */
const RECENT_EVENTS = 1024;

/** Passes events on in seq order, once each: an event ahead of the next seq waits for the gap to fill. */
class SeqMerge {
  /** Seq of the last event passed on. */
  last: number;
  private readonly early = new Map<number, AnySessionEvent>();
  private readonly emit: (event: AnySessionEvent) => void;

  constructor(last: number, emit: (event: AnySessionEvent) => void) {
    this.last = last;
    this.emit = emit;
  }

  offer(event: AnySessionEvent): void {
    if (event.seq <= this.last) return;
    if (event.seq !== this.last + 1) {
      this.early.set(event.seq, event);
      return;
    }
    this.last = event.seq;
    this.emit(event);
    for (let next = this.early.get(this.last + 1); next !== undefined; next = this.early.get(this.last + 1)) {
      this.early.delete(next.seq);
      this.last = next.seq;
      this.emit(next);
    }
  }
}

class Subscriber {
  readonly queue: EventQueue;
  readonly merge: SeqMerge;
  /** The subscriber's own tail while it catches up with the shared one, and the seq that ends it. */
  catchUp?: { readonly controller: AbortController; readonly untilSeq: number };

  constructor(after: number, queue: EventQueue) {
    this.queue = queue;
    this.merge = new SeqMerge(after, (event) => {
      queue.push(event);
      if (this.catchUp !== undefined && this.merge.last >= this.catchUp.untilSeq) this.catchUp.controller.abort();
    });
  }
}

class SessionTail {
  /** The store's tail runs from seq `base + 1`; every later seq is passed on, in order. */
  readonly base: number;
  readonly merge: SeqMerge;
  readonly subscribers = new Set<Subscriber>();
  readonly controller = new AbortController();
  /** The last events passed on (at most 2 × RECENT_EVENTS), ending at `merge.last`. */
  private recent: AnySessionEvent[] = [];

  constructor(base: number) {
    this.base = base;
    this.merge = new SeqMerge(base, (event) => {
      this.recent.push(event);
      if (this.recent.length > 2 * RECENT_EVENTS) this.recent = this.recent.slice(-RECENT_EVENTS);
      for (const subscriber of this.subscribers) subscriber.merge.offer(event);
    });
  }

  /** The events passed on after `after`, when the tail still holds them all (else undefined). */
  since(after: number): readonly AnySessionEvent[] | undefined {
    if (after >= this.merge.last) return [];
    const first = this.recent[0]?.seq;
    if (first === undefined || after + 1 < first) return undefined;
    return this.recent.slice(after + 1 - first);
  }
}

/** The shared tails of a process's sessions (see the module comment). */
export class SessionTails {
  private readonly tails = new Map<string, SessionTail>();
  private readonly sources: TailSources;
  private closed = false;

  constructor(sources: TailSources) {
    this.sources = sources;
  }

  /**
   * Session `id`'s stored events after seq `after`, then each new one, exactly once in seq order,
   * on a queue of the caller's own (closing it unsubscribes).
   */
  subscribe(id: string, after: number, options: { maxQueued?: number } = {}): EventQueue {
    let tail = this.tails.get(id);
    const started = tail === undefined && !this.closed;
    if (started) {
      tail = new SessionTail(after);
      this.tails.set(id, tail);
    }
    let subscriber!: Subscriber;
    const queue = new EventQueue(() => this.unsubscribe(id, tail, subscriber), options);
    subscriber = new Subscriber(after, queue);
    if (tail === undefined) {
      queue.close();
      return queue;
    }
    tail.subscribers.add(subscriber);
    if (started) this.run(id, tail);
    const held = tail.since(after);
    if (held !== undefined) for (const event of held) subscriber.merge.offer(event);
    else this.catchUp(id, tail, subscriber);
    return queue;
  }

  /** A batch this process's journal wrote (in seq order), for the subscribers of its session. */
  dispatch(id: string, events: readonly AnySessionEvent[]): void {
    const tail = this.tails.get(id);
    if (tail === undefined) return;
    for (const event of events) tail.merge.offer(event);
  }

  /** Subscribers of session `id`. */
  count(id: string): number {
    return this.tails.get(id)?.subscribers.size ?? 0;
  }

  /** Sessions with a running tail. */
  get size(): number {
    return this.tails.size;
  }

  /**
   * Stops every tail, then passes on to each subscriber what the store holds after its last
   * event (one read per session) and closes it: a consumer that reads to the end has seen all of
   * the session there was.
   */
  async close(): Promise<void> {
    this.closed = true;
    const tails = [...this.tails];
    this.tails.clear();
    await Promise.all(
      tails.map(async ([id, tail]) => {
        tail.controller.abort();
        const subscribers = [...tail.subscribers];
        for (const subscriber of subscribers) subscriber.catchUp?.controller.abort();
        const open = subscribers.filter((subscriber) => !subscriber.queue.isClosed);
        try {
          if (open.length === 0) return;
          const from = Math.min(...open.map((subscriber) => subscriber.merge.last));
          for await (const event of this.sources.read(id, from)) for (const subscriber of open) subscriber.merge.offer(event);
        } catch {
          // Closing: what could not be read is read by the client's reconnect elsewhere.
        } finally {
          for (const subscriber of subscribers) subscriber.queue.close();
        }
      }),
    );
  }

  private unsubscribe(id: string, tail: SessionTail | undefined, subscriber: Subscriber): void {
    subscriber.catchUp?.controller.abort();
    if (tail === undefined || !tail.subscribers.delete(subscriber) || tail.subscribers.size > 0) return;
    tail.controller.abort();
    if (this.tails.get(id) === tail) this.tails.delete(id);
  }

  /** The store's tail, into the shared merge, until the tail stops; a failure closes its subscribers. */
  private run(id: string, tail: SessionTail): void {
    const signal = tail.controller.signal;
    (async () => {
      for await (const event of this.sources.tail(id, tail.base, signal)) {
        if (signal.aborted) return;
        tail.merge.offer(event);
      }
    })().catch((error: unknown) => {
      if (signal.aborted) return;
      this.sources.failed?.(id, error);
      if (this.tails.get(id) === tail) this.tails.delete(id);
      tail.controller.abort();
      for (const subscriber of [...tail.subscribers]) subscriber.queue.close();
    });
  }

  /**
   * A subscriber behind what the shared tail holds: its own tail of the store from its seq, until
   * it has reached the last seq the shared tail had passed on when it joined (from then on, the
   * shared tail brings it every event). A tail, not a read: when it asked from further back than
   * the shared tail's start, events up to that start may not be stored yet.
   */
  private catchUp(id: string, tail: SessionTail, subscriber: Subscriber): void {
    const controller = new AbortController();
    subscriber.catchUp = { controller, untilSeq: Math.max(tail.base, tail.merge.last) };
    const signal = controller.signal;
    (async () => {
      for await (const event of this.sources.tail(id, subscriber.merge.last, signal)) {
        if (signal.aborted) return;
        subscriber.merge.offer(event);
        if (signal.aborted) return;
      }
    })().catch((error: unknown) => {
      if (signal.aborted) return;
      this.sources.failed?.(id, error);
      subscriber.queue.close();
    });
  }
}
