/**
 * The failure boundary of `llm/stream` (seed 002 14.3 "终局边界"): the innermost step, between the
 * middleware and the adapter. @internal — the service builds it; plugins see only its chunks.
 */
import { deepFreeze } from '../kernel/freeze.ts';
import { DigestTracker } from './digest.ts';
import { LlmError, failureOf, isProgrammingError, llmFailure, pluginFailure } from './errors.ts';
import { isChunkReader, READ_NEXT, type ChunkReader, type ReadError, type ReadResult } from './read-next.ts';
import type { GenerateOptions, StreamChunk } from './types.ts';

/** What the boundary needs of the service: open the adapter stream (route, replay discipline, enter). */
export interface AdapterOpener {
  /** `entered` receives the registration's exit as soon as it was entered; `track` says the adapter writes replay state. */
  openAdapterStream(options: GenerateOptions, binding: unknown, entered: (exit: () => void, track: boolean, owner: string) => void): AsyncIterator<StreamChunk>;
}

/**
 * The innermost step of `llm/stream`: the failure boundary (seed 002 14.3 "终局边界"). Whatever the
 * adapter does, its stream ends with exactly one `finish` and nothing after it:
 * - route selection, replay discipline, `stream()` and `next()` failures → `finish{error|aborted}`;
 * - the adapter ending without a finish → `finish{error, MALFORMED_RESPONSE}` (a body that ends
 *   without its terminal frame is a truncated response, not a clean stop);
 * - a value that is not a chunk → `finish{error, MALFORMED_RESPONSE}`;
 * - once the signal fired, anything but the adapter's own `finish{aborted}` → `finish{aborted}`.
 * Unless the adapter iterator ended or threw by itself, its `return()` is called (consumer exit,
 * abort, a finish or a malformed value), so the adapter can release its request; only then is the
 * registration left (`exit`), so that a swapped-out generation drains after its last request.
 *
 * Hand-written rather than an async generator: it is one hop per chunk on the hot path, and an
 * async function per `next()` costs about half of a generator's yield-and-resume. Like a generator,
 * it starts on the first `next()`, queues overlapping `next()` calls, and after the terminal chunk
 * (or on `return()`) closes the adapter iterator and leaves the registration once.
 */
export class BoundaryStream implements AsyncIterableIterator<StreamChunk>, ChunkReader {
  private iterator: AsyncIterator<StreamChunk> | undefined;
  private exit: (() => void) | undefined;
  /** 0: not started; 1: streaming; 2: the terminal chunk was handed out; 3: closed. */
  private state = 0;
  /** The adapter iterator neither completed nor threw: it may still hold a request. */
  private open = false;
  /** Calls (`next`/`return`) not finished yet; while one runs, later ones wait their turn. */
  private pending = 0;
  private last: Promise<unknown> | undefined;
  /** Digests of the adapter's text blocks, when it writes replay state (see `ReplayEnvelope.digests`). */
  private digests: DigestTracker | undefined;
  /** The plugin that registered the adapter (named in `PLUGIN_ERROR`). */
  private owner: string | undefined;
  /** The callbacks of the `[READ_NEXT]` in flight. */
  private readResult: ReadResult | undefined;
  private readError: ReadError | undefined;
  /** Resolves a `return()` (or `next()`) that queued behind a `[READ_NEXT]` in flight. */
  private readSettled: (() => void) | undefined;

  constructor(
    private readonly service: AdapterOpener,
    private readonly options: GenerateOptions,
    private readonly binding: unknown,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<StreamChunk>> {
    // The steady state (streaming, no call in flight, not aborted): the adapter's step and then
    // `onStep`, with no async function frame per chunk; everything else goes through `stepOp`.
    if (this.pending === 0 && this.state === 1 && this.options.signal?.aborted !== true) {
      this.pending = 1;
      let step: Promise<IteratorResult<StreamChunk>>;
      try {
        step = Promise.resolve(this.iterator!.next());
      } catch (error) {
        step = Promise.reject(error);
      }
      const result = step.then(this.onStep, this.onStepError);
      this.last = result;
      return result;
    }
    return this.schedule(this.stepOp);
  }

  /**
   * `next()` without its promise (see runtime/llm/read-next.ts): in the steady state, the
   * adapter's own `[READ_NEXT]` and then `afterStep`, handed on in the same continuation; anything
   * else as `next()`.
   */
  [READ_NEXT](onResult: ReadResult, onError: ReadError): void {
    const iterator = this.iterator;
    if (this.pending === 0 && this.state === 1 && this.options.signal?.aborted !== true && isChunkReader(iterator)) {
      this.pending = 1;
      this.last = undefined;
      this.readResult = onResult;
      this.readError = onError;
      try {
        iterator[READ_NEXT](this.onReadStep, this.onReadFailure);
      } catch (error) {
        this.onReadFailure(error);
      }
      return;
    }
    this.next().then(onResult, onError);
  }

  private readonly onReadStep = (step: IteratorResult<StreamChunk>): void => {
    const onResult = this.readResult!;
    const onError = this.readError!;
    let result: IteratorResult<StreamChunk>;
    try {
      result = this.afterStep(step);
    } catch (error) {
      this.readDone();
      onError(error);
      return;
    }
    this.readDone();
    onResult(result);
  };

  private readonly onReadFailure = (error: unknown): void => {
    const onResult = this.readResult!;
    const onError = this.readError!;
    let result: IteratorResult<StreamChunk>;
    try {
      result = this.stepFailed(error);
    } catch (thrown) {
      this.readDone();
      onError(thrown);
      return;
    }
    this.readDone();
    onResult(result);
  };

  /** The `[READ_NEXT]` in flight is over: its place in the queue is released. */
  private readDone(): void {
    this.pending--;
    const settled = this.readSettled;
    if (settled !== undefined) {
      this.readSettled = undefined;
      settled();
    }
  }

  return(): Promise<IteratorResult<StreamChunk>> {
    return this.schedule(this.closeOp);
  }

  async throw(error?: unknown): Promise<IteratorResult<StreamChunk>> {
    await this.return();
    throw error;
  }

  /** Runs `op` now, or after the calls still running (an async generator queues its calls too). */
  private schedule(op: () => Promise<IteratorResult<StreamChunk>>): Promise<IteratorResult<StreamChunk>> {
    // A `[READ_NEXT]` in flight has no promise of its own: one is made only for what waits behind it.
    const result = this.pending++ === 0 ? op() : (this.last ?? new Promise<void>((resolve) => (this.readSettled = resolve))).then(op, op);
    this.last = result;
    return result;
  }

  /** One `next()`: the step itself, then its place in the queue is released. */
  private readonly stepOp = async (): Promise<IteratorResult<StreamChunk>> => {
    try {
      if (this.state >= 2) return await this.close();
      const signal = this.options.signal;
      if (this.state === 0) {
        this.state = 1;
        try {
          this.iterator = this.service.openAdapterStream(this.options, this.binding, (exit, track, owner) => {
            this.exit = exit;
            this.owner = owner;
            if (track) this.digests = new DigestTracker();
          });
        } catch (error) {
          this.leave();
          return this.terminal(failureChunk(error, signal, this.owner, this.options.provider));
        }
        this.open = true;
      }
      if (signal?.aborted) return this.terminal(failureChunk(signal.reason, signal));
      let step: IteratorResult<StreamChunk>;
      try {
        step = await this.iterator!.next();
      } catch (error) {
        return this.stepFailed(error);
      }
      return this.afterStep(step);
    } finally {
      this.pending--;
    }
  };

  /** The fast path's continuation: what `stepOp` does once the adapter's step is in. */
  private readonly onStep = (step: IteratorResult<StreamChunk>): IteratorResult<StreamChunk> => {
    try {
      return this.afterStep(step);
    } finally {
      this.pending--;
    }
  };

  private readonly onStepError = (error: unknown): IteratorResult<StreamChunk> => {
    try {
      return this.stepFailed(error);
    } finally {
      this.pending--;
    }
  };

  /** The adapter's `next()` threw or rejected: the terminal failure. */
  private stepFailed(error: unknown): IteratorResult<StreamChunk> {
    this.open = false;
    return this.terminal(failureChunk(error, this.options.signal, this.owner, this.options.provider));
  }

  /** What the adapter's step yields to the consumer: the chunk, or the terminal chunk it calls for. */
  private afterStep(step: IteratorResult<StreamChunk>): IteratorResult<StreamChunk> {
    const signal = this.options.signal;
    if (step.done) {
      this.open = false;
      return this.terminal(
        failureChunk(signal?.aborted ? signal.reason : new LlmError('MALFORMED_RESPONSE', `The adapter for provider "${this.options.provider}" ended its stream without a finish chunk.`), signal),
      );
    }
    const chunk = step.value as StreamChunk | null | undefined;
    if (typeof chunk !== 'object' || chunk === null || typeof chunk.type !== 'string' || (chunk.type === 'finish' && typeof chunk.finish?.kind !== 'string')) {
      return this.terminal(failureChunk(new LlmError('MALFORMED_RESPONSE', `The adapter for provider "${this.options.provider}" yielded ${describeValue(chunk)} instead of a stream chunk.`), signal));
    }
    if (signal?.aborted && !(chunk.type === 'finish' && chunk.finish?.kind === 'aborted')) return this.terminal(failureChunk(signal.reason, signal));
    const digests = this.digests;
    if (digests !== undefined) {
      if (chunk.type === 'finish') return this.terminal(withDigests(chunk, digests));
      digests.push(chunk);
    }
    if (chunk.type === 'finish') this.state = 2;
    // The adapter's own result, handed on (a fresh object per `next()`, as an iterator's results are): no copy per chunk.
    return step.done === false ? step : { value: chunk, done: false };
  }

  /** One `return()`. */
  private readonly closeOp = async (): Promise<IteratorResult<StreamChunk>> => {
    try {
      return await this.close();
    } finally {
      this.pending--;
    }
  };

  /** Hands out the last chunk; the call after it closes. */
  private terminal(chunk: StreamChunk): IteratorResult<StreamChunk> {
    this.state = 2;
    return { value: chunk, done: false };
  }

  /** Releases the adapter iterator (unless it ended by itself), then leaves the registration; once. */
  private async close(): Promise<IteratorResult<StreamChunk>> {
    if (this.state !== 3) {
      this.state = 3;
      try {
        if (this.open) {
          this.open = false;
          await closeQuietly(this.iterator);
        }
      } finally {
        // Only now may a swapped-out generation drain: the adapter has released its request.
        this.leave();
      }
    }
    return { value: undefined, done: true };
  }

  private leave(): void {
    const exit = this.exit;
    this.exit = undefined;
    exit?.();
  }
}

/** The finish with the seam's digests on its envelope (unless it has some: a recorded finish replayed). */
function withDigests(chunk: Extract<StreamChunk, { type: 'finish' }>, digests: DigestTracker): StreamChunk {
  const envelope = chunk.replayState;
  if (envelope?.blocks === undefined || envelope.digests !== undefined || typeof envelope !== 'object') return chunk;
  return { ...chunk, replayState: { ...envelope, digests: digests.digests() } };
}

function failureChunk(error: unknown, signal: AbortSignal | undefined, owner?: string, provider?: string): StreamChunk {
  let failure = signal?.aborted !== true && isProgrammingError(error) ? pluginFailure(error, owner, `the adapter for provider "${provider}"`) : failureOf(error, signal);
  // The adapter kit's PLUGIN_ERROR does not know the plugin's name: the registration does.
  if (failure.code === 'PLUGIN_ERROR' && failure.plugin === undefined && owner !== undefined)
    failure = llmFailure('PLUGIN_ERROR', `Plugin "${owner}": ${failure.message}`, { ...failure, plugin: owner });
  const kind = signal?.aborted || failure.code === 'ABORTED' ? 'aborted' : 'error';
  const normalized = kind === 'aborted' && failure.code !== 'ABORTED' ? llmFailure('ABORTED', failure.message) : failure;
  return deepFreeze({ type: 'finish', finish: { kind, failure: normalized } }) as StreamChunk;
}

async function closeQuietly(iterator: AsyncIterator<StreamChunk> | undefined): Promise<void> {
  try {
    await iterator?.return?.();
  } catch {
    // the adapter failed while releasing its request; the stream already ended
  }
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value !== 'object') return `a ${typeof value}`;
  return (value as { type?: unknown }).type === 'finish' ? 'a finish chunk without a finish reason' : 'an object without a string "type"';
}
