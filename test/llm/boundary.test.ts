/**
 * The `llm/stream` failure boundary (seed 002 14.3 "终局边界", issue #3 "Deliver 5"): adapter
 * selection, construction and iteration failures become exactly one terminal finish; middleware and
 * consumer failures stay thrown; an early exit calls the adapter iterator's `return()`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HarnessError, LlmError, type Harness, type StreamChunk } from '../../runtime/index.ts';
import { FakeAdapter, baseOptions, chunk, collect, deferred, finishStop, harnessWith, text } from './support.ts';

let harness: Harness;
afterEach(async () => {
  await harness?.dispose();
});

async function withAdapter(adapter: FakeAdapter): Promise<Harness> {
  harness = await harnessWith();
  harness.ctx.llm.registerAdapter(['fake'], adapter);
  return harness;
}

/** Exactly one finish, and it is the last chunk. */
function terminal(chunks: readonly StreamChunk[]): StreamChunk {
  expect(chunks.filter((c) => c.type === 'finish')).toHaveLength(1);
  const last = chunks[chunks.length - 1]!;
  expect(last.type).toBe('finish');
  return last;
}

const failureFinish = (kind: 'error' | 'aborted', code: string) => ({
  type: 'finish',
  finish: { kind, failure: expect.objectContaining({ code }) },
});

describe('failure boundary: adapter failures become one terminal finish', () => {
  it('passes a clean stream through untouched (same chunk objects)', async () => {
    const a = text(0, 'hi');
    const adapter = new FakeAdapter(() => [chunk(a), chunk(finishStop)]);
    await withAdapter(adapter);
    const chunks = await collect(harness.llm.stream(baseOptions()));
    expect(chunks).toHaveLength(2);
    expect(chunks[0]).toBe(a);
    expect(chunks[1]).toBe(finishStop);
  });

  it('stream() throwing synchronously → finish{error} with the thrown code', async () => {
    const adapter = new FakeAdapter();
    adapter.throwOnStream = new LlmError('AUTH', 'bad key', { details: { status: 401 } });
    await withAdapter(adapter);
    const chunks = await collect(harness.llm.stream(baseOptions()));
    expect(chunks).toEqual([{ type: 'finish', finish: { kind: 'error', failure: { code: 'AUTH', message: 'bad key', status: 401 } } }]);
    expect(Object.isFrozen(chunks[0])).toBe(true);
  });

  it('a plain Error thrown by stream() is UNKNOWN; a TypeError is a plugin bug (PLUGIN_ERROR, issue 14)', async () => {
    const adapter = new FakeAdapter();
    adapter.throwOnStream = new Error('boom');
    await withAdapter(adapter);
    expect(await collect(harness.llm.stream(baseOptions()))).toEqual([{ type: 'finish', finish: { kind: 'error', failure: { code: 'UNKNOWN', message: 'boom' } } }]);
    adapter.throwOnStream = new TypeError('boom');
    const [finish] = await collect(harness.llm.stream(baseOptions()));
    expect(finish).toMatchObject({ type: 'finish', finish: { kind: 'error', failure: { code: 'PLUGIN_ERROR', errorName: 'TypeError' } } });
  });

  it('the first next() throwing → exactly one finish{error}', async () => {
    const adapter = new FakeAdapter(() => [{ throw: new LlmError('RATE_LIMIT', 'slow down', { details: { status: 429, providerRetryAfterMs: 7000 } }) }]);
    await withAdapter(adapter);
    const chunks = await collect(harness.llm.stream(baseOptions()));
    expect(chunks).toEqual([{ type: 'finish', finish: { kind: 'error', failure: { code: 'RATE_LIMIT', message: 'slow down', status: 429, providerRetryAfterMs: 7000 } } }]);
  });

  it('a mid-stream throw → the chunks so far, then one finish{error}', async () => {
    const adapter = new FakeAdapter(() => [chunk(text(0, 'a')), chunk(text(0, 'b')), { throw: new LlmError('TRANSPORT', 'socket closed') }, chunk(finishStop)]);
    await withAdapter(adapter);
    const chunks = await collect(harness.llm.stream(baseOptions()));
    expect(chunks.slice(0, 2)).toEqual([text(0, 'a'), text(0, 'b')]);
    expect(terminal(chunks)).toEqual(failureFinish('error', 'TRANSPORT'));
    expect(chunks).toHaveLength(3);
  });

  it('a throw after the signal aborted → finish{aborted} with code ABORTED', async () => {
    const controller = new AbortController();
    const gate = deferred();
    const adapter = new FakeAdapter(() => [chunk(text(0, 'a')), { wait: gate.promise }, { throw: new LlmError('TRANSPORT', 'terminated') }]);
    await withAdapter(adapter);
    const chunks: StreamChunk[] = [];
    for await (const c of harness.llm.stream(baseOptions({ signal: controller.signal }))) {
      chunks.push(c);
      if (chunks.length === 1) {
        setTimeout(() => {
          controller.abort();
          gate.resolve();
        }, 1);
      }
    }
    expect(chunks[0]).toEqual(text(0, 'a'));
    expect(terminal(chunks)).toEqual({ type: 'finish', finish: { kind: 'aborted', failure: { code: 'ABORTED', message: 'terminated' } } });
    expect(chunks).toHaveLength(2);
  });

  it('a signal already aborted → finish{aborted} and the adapter is never called', async () => {
    const adapter = new FakeAdapter();
    await withAdapter(adapter);
    const controller = new AbortController();
    controller.abort();
    const chunks = await collect(harness.llm.stream(baseOptions({ signal: controller.signal })));
    expect(chunks).toEqual([failureFinish('aborted', 'ABORTED')]);
    expect(adapter.calls).toHaveLength(0);
  });

  it('an adapter that ends without a finish → one finish{error, MALFORMED_RESPONSE} (a clean end without a terminal frame is a truncated body)', async () => {
    const adapter = new FakeAdapter(() => [chunk(text(0, 'a')), { end: true }]);
    await withAdapter(adapter);
    const chunks = await collect(harness.llm.stream(baseOptions()));
    expect(chunks[0]).toEqual(text(0, 'a'));
    expect(terminal(chunks)).toEqual(failureFinish('error', 'MALFORMED_RESPONSE'));
    expect(chunks).toHaveLength(2);
  });

  it('an adapter that ends without a finish after the signal aborted → finish{aborted}', async () => {
    const controller = new AbortController();
    const adapter = new FakeAdapter(() => {
      controller.abort();
      return [{ end: true }];
    });
    await withAdapter(adapter);
    const chunks = await collect(harness.llm.stream(baseOptions({ signal: controller.signal })));
    expect(chunks).toEqual([failureFinish('aborted', 'ABORTED')]);
  });

  it('an adapter that keeps yielding after the signal aborted is stopped: one finish{aborted}, then return() on its iterator', async () => {
    const controller = new AbortController();
    const adapter = new FakeAdapter(() => [chunk(text(0, 'x'))]);
    adapter.repeatLast = true; // never ends, never looks at the signal
    await withAdapter(adapter);
    const chunks: StreamChunk[] = [];
    for await (const c of harness.llm.stream(baseOptions({ signal: controller.signal }))) {
      chunks.push(c);
      if (chunks.length === 3) controller.abort();
      if (chunks.length > 50) break;
    }
    expect(chunks.slice(0, 3)).toEqual([text(0, 'x'), text(0, 'x'), text(0, 'x')]);
    expect(terminal(chunks)).toEqual(failureFinish('aborted', 'ABORTED'));
    expect(chunks).toHaveLength(4);
    expect(adapter.lastIterator.returnCalls).toBe(1);
  });

  it('a successful finish arriving after the signal aborted is reported as aborted', async () => {
    const controller = new AbortController();
    const gate = deferred();
    const adapter = new FakeAdapter(() => [chunk(text(0, 'a')), { wait: gate.promise }, chunk(finishStop)]);
    await withAdapter(adapter);
    const chunks: StreamChunk[] = [];
    const stream = harness.llm.stream(baseOptions({ signal: controller.signal }));
    const iterator = stream[Symbol.asyncIterator]();
    chunks.push((await iterator.next()).value);
    const pending = iterator.next();
    controller.abort();
    gate.resolve();
    chunks.push((await pending).value);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(terminal(chunks)).toEqual(failureFinish('aborted', 'ABORTED'));
  });

  it("the adapter's own finish{aborted} after an abort passes through unchanged", async () => {
    const controller = new AbortController();
    const gate = deferred();
    const own = { type: 'finish' as const, finish: { kind: 'aborted' as const, failure: { code: 'ABORTED', message: 'adapter saw the abort' } } };
    const adapter = new FakeAdapter(() => [{ wait: gate.promise }, chunk(own)]);
    await withAdapter(adapter);
    const iterator = harness.llm.stream(baseOptions({ signal: controller.signal }))[Symbol.asyncIterator]();
    const pending = iterator.next();
    controller.abort();
    gate.resolve();
    expect((await pending).value).toBe(own);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('nothing after the finish: later adapter chunks are dropped and the adapter iterator is closed', async () => {
    const adapter = new FakeAdapter(() => [chunk(text(0, 'a')), chunk(finishStop), chunk(text(0, 'late')), chunk(finishStop)]);
    await withAdapter(adapter);
    const chunks = await collect(harness.llm.stream(baseOptions()));
    expect(chunks).toEqual([text(0, 'a'), finishStop]);
    expect(adapter.lastIterator.nextCalls).toBe(2);
    expect(adapter.lastIterator.returnCalls).toBe(1);
  });

  it('a value that is not a chunk → finish{error, MALFORMED_RESPONSE}', async () => {
    for (const raw of [undefined, null, 42, { index: 0 }, { type: 'finish' }]) {
      const adapter = new FakeAdapter(() => [chunk(text(0, 'a')), { raw }]);
      await withAdapter(adapter);
      const chunks = await collect(harness.llm.stream(baseOptions()));
      expect(chunks).toHaveLength(2);
      expect(terminal(chunks)).toEqual(failureFinish('error', 'MALFORMED_RESPONSE'));
      expect(adapter.lastIterator.returnCalls).toBe(1);
      await harness.dispose();
    }
  });

  it('no route → one finish{error, NO_ADAPTER} naming the known providers', async () => {
    await withAdapter(new FakeAdapter());
    const chunks = await collect(harness.llm.stream(baseOptions({ provider: 'nope' })));
    expect(chunks).toEqual([{ type: 'finish', finish: { kind: 'error', failure: { code: 'NO_ADAPTER', provider: 'nope', message: 'No adapter serves provider "nope". Known providers: fake.' } } }]);
  });
});

describe('failure boundary: middleware and consumer failures stay thrown', () => {
  it('a middleware (async generator) that throws → thrown to the consumer, not a finish', async () => {
    const adapter = new FakeAdapter(() => [chunk(text(0, 'a')), chunk(finishStop)]);
    await withAdapter(adapter);
    const veto = new HarnessError('VETOED', 'not today');
    harness.ctx.on('llm/stream', async function* (options, next) {
      for await (const c of next(options)) {
        yield c;
        throw veto;
      }
    });
    const seen: StreamChunk[] = [];
    await expect(
      (async () => {
        for await (const c of harness.llm.stream(baseOptions())) seen.push(c);
      })(),
    ).rejects.toBe(veto);
    expect(seen).toEqual([text(0, 'a')]);
    // The middleware's for-await closed the boundary, which closed the adapter.
    expect(adapter.lastIterator.returnCalls).toBe(1);
  });

  it('a synchronous middleware veto throws from stream() itself; the adapter is never called', async () => {
    const adapter = new FakeAdapter();
    await withAdapter(adapter);
    const veto = new HarnessError('VETOED', 'no');
    harness.ctx.on('llm/stream', () => {
      throw veto;
    });
    expect(() => harness.llm.stream(baseOptions())).toThrow(veto);
    expect(adapter.calls).toHaveLength(0);
  });

  it('a middleware may replace the stream (the adapter is never called) or rewrite the options', async () => {
    const adapter = new FakeAdapter((options) => [chunk(text(0, options.model)), chunk(finishStop)]);
    await withAdapter(adapter);
    const dispose = harness.ctx.on('llm/stream', async function* () {
      yield text(0, 'canned');
      yield finishStop;
    });
    expect(await collect(harness.llm.stream(baseOptions()))).toEqual([text(0, 'canned'), finishStop]);
    expect(adapter.calls).toHaveLength(0);
    dispose();
    harness.ctx.on('llm/stream', (options, next) => next({ ...options, model: 'rewritten' }));
    expect(await collect(harness.llm.stream(baseOptions()))).toEqual([text(0, 'rewritten'), finishStop]);
  });

  it('a consumer that throws inside for-await → thrown, and the adapter iterator is closed once', async () => {
    const adapter = new FakeAdapter(() => [chunk(text(0, 'a')), chunk(text(0, 'b')), chunk(finishStop)]);
    await withAdapter(adapter);
    const oops = new Error('consumer bug');
    await expect(
      (async () => {
        for await (const c of harness.llm.stream(baseOptions())) {
          if (c.type === 'text-delta') throw oops;
        }
      })(),
    ).rejects.toBe(oops);
    expect(adapter.lastIterator.returnCalls).toBe(1);
    expect(adapter.lastIterator.nextCalls).toBe(1);
  });

  it('an early consumer break closes the adapter iterator once, also through a wrapping middleware', async () => {
    const adapter = new FakeAdapter(() => [chunk(text(0, 'a')), chunk(text(0, 'b')), chunk(finishStop)]);
    await withAdapter(adapter);
    for await (const c of harness.llm.stream(baseOptions())) {
      expect(c).toEqual(text(0, 'a'));
      break;
    }
    expect(adapter.lastIterator.returnCalls).toBe(1);
    harness.ctx.on('llm/stream', async function* (options, next) {
      yield* next(options);
    });
    for await (const _ of harness.llm.stream(baseOptions())) break;
    expect(adapter.iterators).toHaveLength(2);
    expect(adapter.lastIterator.returnCalls).toBe(1);
  });

  it('a nested call failing inside a middleware is thrown (not turned into a finish of the outer call)', async () => {
    const adapter = new FakeAdapter(() => [chunk(finishStop)]);
    await withAdapter(adapter);
    harness.ctx.on('llm/stream', async function* (options, next) {
      if (options.purpose !== 'session-title') {
        const prepared = await harness.llm.prepareCall({ provider: 'missing', model: 'x' });
        yield* prepared.stream({ ...prepared.config, messages: [] });
      }
      yield* next(options);
    });
    await expect(collect(harness.llm.stream(baseOptions()))).rejects.toMatchObject({ code: 'NO_ADAPTER' });
  });
});
