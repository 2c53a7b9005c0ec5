/**
 * The hot path's promise-free read (runtime/llm/read-next.ts): `[READ_NEXT]` of the adapter kit's
 * StreamPump and of the `llm/stream` boundary gives what `next()` gives — the same chunks in the
 * same order, the same mapped failure — and bounds its synchronous hand-offs (one SDK event that
 * parses into 50,000 chunks does not overflow the stack); a `return()` that comes while a read is
 * in flight waits for it, as it waits for a `next()`.
 */
import { describe, expect, it } from 'vitest';
import { BoundaryStream } from '../../runtime/llm/boundary.ts';
import { isChunkReader, READ_NEXT, type ChunkReader } from '../../runtime/llm/read-next.ts';
import { LlmError, StreamPump, type StreamChunk, type StreamParser } from '../../runtime/index.ts';

/** Event `n`: n text deltas; the SDK fails after the events. */
class CountingParser implements StreamParser<number> {
  readonly out: StreamChunk[] = [];
  private text = 0;
  push(event: number): void {
    for (let i = 0; i < event; i++) this.out.push({ type: 'text-delta', index: 0, text: `t${this.text++}` });
  }
  finish(): void {
    this.out.push({ type: 'finish', finish: { kind: 'stop' } });
  }
}

function pump(events: readonly number[], failAtEnd: boolean): StreamPump<number> {
  async function* sdk(): AsyncGenerator<number> {
    for (const event of events) {
      await new Promise((resolve) => setImmediate(resolve));
      yield event;
    }
    if (failAtEnd) throw new Error('connection reset');
  }
  return new StreamPump<number>({
    provider: 'p',
    signal: undefined,
    idleMs: 60_000,
    open: async () => sdk(),
    parser: new CountingParser(),
    mapError: (error) => new LlmError('NETWORK', `mapped: ${(error as Error).message}`),
  });
}

type Read = { chunks: string[]; failure?: string };

function describeChunk(chunk: StreamChunk): string {
  return chunk.type === 'text-delta' ? chunk.text : chunk.type === 'finish' ? `finish:${chunk.finish.kind}${chunk.finish.kind === 'error' ? `:${chunk.finish.failure.code}` : ''}` : chunk.type;
}

async function readWithNext(iterator: AsyncIterator<StreamChunk>): Promise<Read> {
  const chunks: string[] = [];
  try {
    for (;;) {
      const step = await iterator.next();
      if (step.done) return { chunks };
      chunks.push(describeChunk(step.value));
    }
  } catch (error) {
    return { chunks, failure: `${(error as LlmError).code} ${(error as Error).message}` };
  }
}

function readWithReadNext(reader: ChunkReader): Promise<Read> {
  return new Promise((resolve) => {
    const chunks: string[] = [];
    const onResult = (step: IteratorResult<StreamChunk>): void => {
      if (step.done) return resolve({ chunks });
      chunks.push(describeChunk(step.value));
      reader[READ_NEXT](onResult, onError);
    };
    const onError = (error: unknown): void => resolve({ chunks, failure: `${(error as LlmError).code} ${(error as Error).message}` });
    reader[READ_NEXT](onResult, onError);
  });
}

const service = (iterator: () => AsyncIterator<StreamChunk>) => ({
  openAdapterStream: (_options: unknown, _binding: unknown, entered: (exit: () => void, track: boolean, owner: string) => void) => {
    entered(() => undefined, false, 'test-plugin');
    return iterator();
  },
});

describe('[READ_NEXT] reads as next() does', () => {
  it('StreamPump: the same chunks and the same mapped failure; 50,000 chunks of one event do not overflow the stack', async () => {
    const events = [1, 50_000, 2, 3];
    const viaNext = await readWithNext(pump(events, true));
    const viaRead = await readWithReadNext(pump(events, true));
    expect(viaNext.chunks).toHaveLength(50_006);
    expect(viaNext.failure).toBe('NETWORK mapped: connection reset');
    expect(viaRead).toEqual(viaNext);
    // The clean end: the parser's finish, then done.
    const clean = await readWithReadNext(pump([2, 1], false));
    expect(clean).toEqual(await readWithNext(pump([2, 1], false)));
    expect(clean.chunks.at(-1)).toBe('finish:stop');
  });

  it('BoundaryStream over a StreamPump: the same chunks, and the failure as its terminal finish', async () => {
    const events = [3, 40_000, 1];
    const options = { provider: 'p', model: 'm', messages: [] } as never;
    const viaNext = await readWithNext(new BoundaryStream(service(() => pump(events, true)) as never, options, undefined));
    const boundary = new BoundaryStream(service(() => pump(events, true)) as never, options, undefined);
    expect(isChunkReader(boundary)).toBe(true);
    const viaRead = await readWithReadNext(boundary);
    expect(viaNext.chunks.at(-1)).toBe('finish:error:NETWORK');
    expect(viaNext.failure).toBeUndefined();
    expect(viaRead).toEqual(viaNext);
  });

  it('BoundaryStream: a return() while a read is in flight waits for it, then closes the adapter once', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const log: string[] = [];
    const adapter: ChunkReader = {
      next: async () => ({ value: { type: 'text-delta', index: 0, text: 'x' }, done: false }),
      [READ_NEXT](onResult) {
        log.push('read');
        void gate.then(() => {
          log.push('chunk');
          onResult({ value: { type: 'text-delta', index: 0, text: 'x' }, done: false });
        });
      },
      return: async () => {
        log.push('adapter return');
        return { value: undefined, done: true };
      },
    };
    const boundary = new BoundaryStream(service(() => adapter) as never, { provider: 'p', model: 'm', messages: [] } as never, undefined);
    await boundary.next(); // opens the adapter stream (the first read is a next())
    let first: IteratorResult<StreamChunk> | undefined;
    boundary[READ_NEXT](
      (step) => (first = step),
      () => undefined,
    );
    const closed = boundary.return().then(() => log.push('closed'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['read']); // return() waits: the adapter is not closed under the read
    release();
    await closed;
    expect(first).toEqual({ value: { type: 'text-delta', index: 0, text: 'x' }, done: false });
    expect(log).toEqual(['read', 'chunk', 'adapter return', 'closed']);
  });
});
