/**
 * Live tails of session events, one per session per process, shared by all its subscribers
 * (`TurnService.events`). A session's tail merges, by seq, two sources of stored events: the
 * store's own tail (what any process stored, from where it started) and the batches this
 * process's journals have written (`session/written`). A live subscriber has its own cursor and
 * queue: the tail passes each event on to every queue synchronously, never waiting for a consumer,
 * so a slow consumer slows neither the others nor the writer; a queue past its bound is closed
 * (`overflowed`; an SSE client then reconnects with Last-Event-ID).
 *
 * A subscriber starts by catching up on its own: it reads the store in pages from its seq, paced
 * by its consumer (it reads on only while fewer than {@link CATCH_UP_QUEUED} events wait in its
 * queue), so catching up from any distance behind holds a page and a queue of events, never the
 * distance. It joins the shared tail as soon as the tail holds every event after its last one
 * (the tail's recent events); one that reaches the store's end with no shared tail running
 * starts it there. The shared tail thus starts at the store's end, never far behind it, and stops
 * after its last subscriber.
 */
import type { AnySessionEvent } from '../../runtime/index.ts';

/** A one-consumer async queue of events with a close, bounded by `maxQueued` (default unbounded). */
export class EventQueue implements AsyncIterableIterator<AnySessionEvent> {
  private buffer: AnySessionEvent[] = [];
  private head = 0;
  private waiting: ((result: IteratorResult<AnySessionEvent>) => void) | null = null;
  private readonly closing = new AbortController();
  private overflow = false;
  /** A producer waiting for fewer than `limit` queued events ({@link room}). */
  private roomWaiting: { readonly limit: number; readonly resolve: () => void } | null = null;
  private readonly onReturn: () => void;
  /** Unread events past which the queue closes (`overflowed`). */
  readonly maxQueued: number;

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
    const roomWaiting = this.roomWaiting;
    this.roomWaiting = null;
    roomWaiting?.resolve();
  }

  /**
   * Resolves once fewer than `limit` events are queued, or the queue closed: a producer paced by
   * the consumer (a catch-up reading the store) waits on it instead of queuing ahead.
   */
  room(limit: number): Promise<void> {
    if (this.buffer.length - this.head < limit || this.closing.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => (this.roomWaiting = { limit, resolve }));
  }

  private wakeProducer(): void {
    const roomWaiting = this.roomWaiting;
    if (roomWaiting === null || this.buffer.length - this.head >= roomWaiting.limit) return;
    this.roomWaiting = null;
    roomWaiting.resolve();
  }

  next(): Promise<IteratorResult<AnySessionEvent>> {
    if (this.head < this.buffer.length) {
      const value = this.buffer[this.head++]!;
      if (this.head === this.buffer.length) {
        this.buffer = [];
        this.head = 0;
      }
      if (this.roomWaiting !== null) this.wakeProducer();
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
    if (this.roomWaiting !== null) this.wakeProducer();
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
  /** The stored events of session `id` after `afterSeq`, to the end, read as they are consumed (the store's pages). */
  read(id: string, afterSeq: number): AsyncIterable<AnySessionEvent>;
  /** A source failed (the subscribers it fed are closed: they reconnect). */
  failed?(id: string, error: unknown): void;
}

/** Events a tail keeps after passing them on, for subscribers that join a little behind it. */
const RECENT_EVENTS = 1024;

/**
 * Events a catching-up subscriber's queue holds before its reading of the store waits for the
 * consumer (with its page of the store, what a subscriber holds while it catches up).
 */
export const CATCH_UP_QUEUED = 1024;

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
  /** The shared tail it has joined; undefined while it catches up on its own. */
  tail: SessionTail | undefined;
  /** Ends its own reading of the store (it joined, or it is gone). */
  readonly catchUp = new AbortController();

  constructor(after: number, queue: EventQueue) {
    this.queue = queue;
    this.merge = new SeqMerge(after, (event) => queue.push(event));
  }
}

class SessionTail {
  /** The store's tail runs from seq `base + 1`; every later seq is passed on, in order. */
  readonly base: number;
  readonly merge: SeqMerge;
  /** The subscribers it feeds (those that joined it). */
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
  /** Every open subscriber per session, catching up or joined. */
  private readonly subscribers = new Map<string, Set<Subscriber>>();
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
    let subscriber!: Subscriber;
    const queue = new EventQueue(() => this.unsubscribe(id, subscriber), options);
    subscriber = new Subscriber(after, queue);
    if (this.closed) {
      queue.close();
      return queue;
    }
    let all = this.subscribers.get(id);
    if (all === undefined) {
      all = new Set();
      this.subscribers.set(id, all);
    }
    all.add(subscriber);
    const tail = this.tails.get(id);
    if (tail === undefined || !this.join(tail, subscriber)) this.catchUp(id, subscriber);
    return queue;
  }

  /** A batch this process's journal wrote (in seq order), for the subscribers of its session. */
  dispatch(id: string, events: readonly AnySessionEvent[]): void {
    const tail = this.tails.get(id);
    if (tail === undefined) return;
    for (const event of events) tail.merge.offer(event);
  }

  /** Open subscribers of session `id`, catching up or joined. */
  count(id: string): number {
    return this.subscribers.get(id)?.size ?? 0;
  }

  /** Subscribers of session `id` still reading the store on their own (not joined to its shared tail yet). */
  catchingUp(id: string): number {
    let n = 0;
    for (const subscriber of this.subscribers.get(id) ?? []) if (subscriber.tail === undefined) n++;
    return n;
  }

  /** Sessions with a running tail. */
  get size(): number {
    return this.tails.size;
  }

  /**
   * Stops every tail and catch-up, then passes on to each subscriber what the store holds after
   * its last event (one read per session) and closes it: a consumer that reads to the end has
   * seen all of the session there was.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const tail of this.tails.values()) tail.controller.abort();
    this.tails.clear();
    const sessions = [...this.subscribers];
    this.subscribers.clear();
    await Promise.all(
      sessions.map(async ([id, all]) => {
        const subscribers = [...all];
        for (const subscriber of subscribers) subscriber.catchUp.abort();
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

  /**
   * Joins `subscriber` to the shared `tail` when the tail holds every event after the subscriber's
   * last one (passed on now); false when it does not (the subscriber reads on by itself).
   */
  private join(tail: SessionTail, subscriber: Subscriber): boolean {
    const held = tail.since(subscriber.merge.last);
    if (held === undefined) return false;
    subscriber.catchUp.abort();
    subscriber.tail = tail;
    tail.subscribers.add(subscriber);
    for (const event of held) subscriber.merge.offer(event);
    return true;
  }

  private unsubscribe(id: string, subscriber: Subscriber): void {
    subscriber.catchUp.abort();
    const all = this.subscribers.get(id);
    if (all?.delete(subscriber) && all.size === 0) this.subscribers.delete(id);
    const tail = subscriber.tail;
    if (tail === undefined || !tail.subscribers.delete(subscriber) || tail.subscribers.size > 0) return;
    tail.controller.abort();
    if (this.tails.get(id) === tail) this.tails.delete(id);
  }

  /** Starts session `id`'s shared tail after seq `base`. */
  private start(id: string, base: number): SessionTail {
    const tail = new SessionTail(base);
    this.tails.set(id, tail);
    this.run(id, tail);
    return tail;
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
   * A subscriber the shared tail cannot serve yet reads the store itself, in pages, reading on only
   * while its queue has room (its consumer sets the pace), until it can join the shared tail. At
   * the store's end it starts the shared tail when none runs. When the shared tail started further
   * on (a subscriber asked from a seq not stored yet) it follows the store's tail itself, paced
   * the same way, until it reaches the shared one.
   */
  private catchUp(id: string, subscriber: Subscriber): void {
    const signal = subscriber.catchUp.signal;
    const { queue, merge } = subscriber;
    const limit = Math.max(1, Math.min(CATCH_UP_QUEUED, queue.maxQueued));
    /** Passes `event` on once the queue has room; true when the subscriber is done catching up. */
    const offer = async (event: AnySessionEvent): Promise<boolean> => {
      if (queue.queued >= limit) await queue.room(limit);
      if (signal.aborted) return true;
      merge.offer(event);
      const tail = this.tails.get(id);
      return tail !== undefined && this.join(tail, subscriber);
    };
    (async () => {
      for (;;) {
        const from = merge.last;
        for await (const event of this.sources.read(id, from)) if (await offer(event)) return;
        if (signal.aborted) return;
        if (merge.last === from) break; // the store's end
      }
      const tail = this.tails.get(id) ?? this.start(id, merge.last);
      if (this.join(tail, subscriber)) return;
      for await (const event of this.sources.tail(id, merge.last, signal)) if (await offer(event)) return;
    })().catch((error: unknown) => {
      if (signal.aborted) return;
      this.sources.failed?.(id, error);
      queue.close();
    });
  }
}
