/**
 * The per-chunk loop of a model call (runtime/agent/session.ts `streamCall`): reads the call's
 * chunks and hands each to `onChunk` in order, with no `await` per chunk — an `await` in an async
 * function costs a frame resume and its closures on every chunk; here each read is one `.then`
 * with continuations bound once per call — or, from the runtime's own stream (the `llm/stream`
 * boundary with no middleware in front), a `[READ_NEXT]` that hands the chunk over with no
 * promise of this stage at all (runtime/llm/read-next.ts).
 *
 * It behaves as the `for (;;) { next = await chunks.next(); … }` loop it replaces:
 * - the stream's end resolves `run()`;
 * - `chunks.next()` rejecting (or throwing): `onReadError` decides — it returns the chunk that stands
 *   for the failure (handed to `onChunk` as the last one), or throws, and `run()` rejects with that;
 *   either way the stream counts as ended (its iterator is not to be closed);
 * - `onChunk` may return a promise: the next read waits for it; `onChunk` throwing (or its promise
 *   rejecting) rejects `run()`, with the stream not ended (the caller closes its iterator).
 */
import { isChunkReader, READ_NEXT, type ChunkReader } from '../llm/read-next.ts';
import type { StreamChunk } from '../llm/types.ts';

export class ChunkDrain {
  /** True once the stream ended by itself (done, or its read failed): nothing to close. */
  ended = false;
  /** The failure chunk from `onReadError` was handed out: the drain stops after it. */
  private last = false;
  private resolve: () => void = () => undefined;
  private reject: (error: unknown) => void = () => undefined;
  /** The stream, when it can be read without a promise per chunk. */
  private readonly reader: ChunkReader | undefined;

  constructor(
    private readonly chunks: AsyncIterator<StreamChunk>,
    private readonly onChunk: (chunk: StreamChunk) => void | Promise<void>,
    private readonly onReadError: (error: unknown) => StreamChunk,
  ) {
    this.reader = isChunkReader(chunks) ? chunks : undefined;
  }

  /** Drains the stream; resolves at its end, or after the failure chunk. */
  run(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.read();
    });
  }

  private read(): void {
    const reader = this.reader;
    if (reader !== undefined) {
      // Both continuations catch everything; either may run before this returns.
      try {
        reader[READ_NEXT](this.onNext, this.onRejected);
      } catch (error) {
        this.onRejected(error);
      }
      return;
    }
    let next: Promise<IteratorResult<StreamChunk>>;
    try {
      next = Promise.resolve(this.chunks.next());
    } catch (error) {
      next = Promise.reject(error);
    }
    // Both continuations catch everything: the promise `then` makes never rejects.
    void next.then(this.onNext, this.onRejected);
  }

  private readonly onNext = (next: IteratorResult<StreamChunk>): void => {
    if (next.done) {
      this.ended = true;
      this.resolve();
      return;
    }
    this.hand(next.value);
  };

  private readonly onRejected = (error: unknown): void => {
    this.ended = true;
    let chunk: StreamChunk;
    try {
      chunk = this.onReadError(error);
    } catch (thrown) {
      this.reject(thrown);
      return;
    }
    this.last = true;
    this.hand(chunk);
  };

  private hand(chunk: StreamChunk): void {
    let waiting: void | Promise<void>;
    try {
      waiting = this.onChunk(chunk);
    } catch (error) {
      this.reject(error);
      return;
    }
    if (waiting === undefined) this.afterChunk();
    else waiting.then(this.afterChunk, this.reject);
  }

  private readonly afterChunk = (): void => {
    if (this.last) this.resolve();
    else this.read();
  };
}
