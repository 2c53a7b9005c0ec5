/**
 * A one-consumer async queue: the loop pushes events as it journals them; `session.run`'s caller
 * iterates them. Unbounded by design — the journal, not the consumer, paces the loop.
 *
 * On the per-chunk hot path: a waiting `next()` makes its promise with one executor bound once per
 * channel (no closure per chunk), and `push` hands the event straight to it.
 */
export class EventChannel<T> implements AsyncIterable<T> {
  private readonly buffer: T[] = [];
  private head = 0;
  private waiting: ((result: IteratorResult<T>) => void) | null = null;
  private rejectWaiting: ((error: unknown) => void) | null = null;
  private closed = false;
  private failure: { error: unknown } | null = null;

  /**
   * @param beforeEnd awaited before the consumer sees the end (done, or the failure) — `run()`
   *   waits for its turn to close in the journal there, with no extra hop per event.
   */
  constructor(private readonly beforeEnd?: () => Promise<void>) {}

  /** The end as the consumer sees it: after `beforeEnd`. */
  private end(): Promise<IteratorResult<T>> {
    if (this.beforeEnd === undefined) return this.failure ? Promise.reject(this.failure.error) : Promise.resolve({ value: undefined, done: true });
    return this.beforeEnd().then((): IteratorResult<T> => {
      if (this.failure) throw this.failure.error;
      return { value: undefined, done: true };
    });
  }

  /** The executor of a waiting `next()`'s promise (one per channel). */
  private readonly park = (resolve: (result: IteratorResult<T>) => void, reject: (error: unknown) => void): void => {
    this.waiting = resolve;
    this.rejectWaiting = reject;
  };

  push(value: T): void {
    if (this.closed) return;
    if (this.waiting !== null) {
      const resolve = this.waiting;
      this.waiting = null;
      this.rejectWaiting = null;
      resolve({ value, done: false });
      return;
    }
    this.buffer.push(value);
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  fail(error: unknown): void {
    this.failure = { error };
    this.closed = true;
    this.wake();
  }

  private wake(): void {
    if (this.waiting === null) return;
    const resolve = this.waiting;
    const reject = this.rejectWaiting!;
    this.waiting = null;
    this.rejectWaiting = null;
    if (this.beforeEnd !== undefined) {
      this.end().then(resolve, reject);
      return;
    }
    if (this.failure) reject(this.failure.error);
    else resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: (): Promise<IteratorResult<T>> => {
        if (this.head < this.buffer.length) {
          const value = this.buffer[this.head++]!;
          if (this.head > 1024 && this.head * 2 > this.buffer.length) {
            this.buffer.splice(0, this.head);
            this.head = 0;
          }
          return Promise.resolve({ value, done: false });
        }
        if (this.closed) return this.end();
        return new Promise(this.park);
      },
      return: (): Promise<IteratorResult<T>> => {
        this.closed = true;
        this.buffer.length = 0;
        this.head = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
