/**
 * Live tails of session events: one `session/written` observer for the whole server (the batches
 * this process's journals have written), fanned out to the subscribers of each session. A
 * subscriber is an async queue; a tail is "the events after seq N, then every new one", each
 * exactly once and in seq order (see `TurnService.events`).
 */
import type { AnySessionEvent } from '../../runtime/index.ts';

/** A one-consumer async queue of events with a close. Unbounded: the SSE writer bounds itself. */
export class EventQueue implements AsyncIterableIterator<AnySessionEvent> {
  private buffer: AnySessionEvent[] = [];
  private head = 0;
  private waiting: ((result: IteratorResult<AnySessionEvent>) => void) | null = null;
  private closed = false;
  private readonly onReturn: () => void;

  constructor(onReturn: () => void) {
    this.onReturn = onReturn;
  }

  push(event: AnySessionEvent): void {
    if (this.closed) return;
    const waiting = this.waiting;
    if (waiting !== null) {
      this.waiting = null;
      waiting({ value: event, done: false });
      return;
    }
    this.buffer.push(event);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
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
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
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
    return this.closed;
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

/** Subscribers per session; `dispatch` is the observer's body (synchronous, once per written batch). */
export class FanOut {
  private readonly subscribers = new Map<string, Set<(event: AnySessionEvent) => void>>();

  subscribe(sessionId: string, listener: (event: AnySessionEvent) => void): () => void {
    let set = this.subscribers.get(sessionId);
    if (set === undefined) {
      set = new Set();
      this.subscribers.set(sessionId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.subscribers.get(sessionId) === set) this.subscribers.delete(sessionId);
    };
  }

  /** Passes a written batch (in seq order) to each subscriber of its session. */
  dispatch(sessionId: string, events: readonly AnySessionEvent[]): void {
    const set = this.subscribers.get(sessionId);
    if (set === undefined) return;
    for (const listener of set) for (const event of events) listener(event);
  }

  count(sessionId: string): number {
    return this.subscribers.get(sessionId)?.size ?? 0;
  }
}
