/**
 * The in-process read of a chunk stream without a promise per chunk (DESIGN "The hot path").
 * @internal — between the runtime's own stages only: the adapter kit's `StreamPump`, the
 * `llm/stream` boundary and the agent loop's chunk drain. Plugins see plain async iterators.
 *
 * `iterator.next().then(f)` at every stage costs a promise, a reaction and a microtask per stage
 * per chunk; with `[READ_NEXT](onResult, onError)` a stage hands its next result straight to the
 * callbacks of the stage after it, so the SDK event's one promise reaches the consumer in one
 * continuation. A stage that cannot (a middleware's async generator) is read with `next()`.
 */
import type { StreamChunk } from './types.ts';

export const READ_NEXT: unique symbol = Symbol('harness.readNext');

/** Receives the next result (or the failure `next()` would have rejected with); must not throw. */
export type ReadResult = (result: IteratorResult<StreamChunk>) => void;
export type ReadError = (error: unknown) => void;

/**
 * A chunk iterator that can hand its next result to callbacks. Exactly one of them is called,
 * once, possibly before `[READ_NEXT]` returns (a chunk already parsed); it behaves as `next()`
 * would (same results, same order, the same failures), and like `next()` one read at a time.
 */
export interface ChunkReader extends AsyncIterator<StreamChunk> {
  [READ_NEXT](onResult: ReadResult, onError: ReadError): void;
}

export function isChunkReader(iterator: AsyncIterator<StreamChunk> | undefined): iterator is ChunkReader {
  return iterator !== undefined && typeof (iterator as Partial<ChunkReader>)[READ_NEXT] === 'function';
}

/** Nested synchronous hand-offs allowed before a result goes through a promise (bounds the stack). */
export const MAX_SYNC_READS = 32;
