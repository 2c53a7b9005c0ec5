/**
 * A one-consumer async queue: the loop pushes events as it journals them; `session.run`'s caller
 * iterates them. Unbounded by design — the journal, not the consumer, paces the loop.
 */
export class EventChannel<T> implements AsyncIterable<T> {
  private readonly buffer: T[] = [];
  private head = 0;
  private waiting: ((result: IteratorResult<T>) => void) | null = null;
  private rejectWaiting: ((error: unknown) => void) | null = null;
  private closed = false;
  private failure: { error: unknown } | null = null;

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
        if (this.failure) return Promise.reject(this.failure.error);
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => {
          this.waiting = resolve;
          this.rejectWaiting = reject;
        });
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
