/**
 * Issue 14, deliverable 3: a plugin's bug is a plugin's bug. A programming error (TypeError) in an
 * adapter, in an SDK adapter's parser (the adapter kit's StreamPump) or in an `llm/stream`
 * middleware becomes a terminal `finish{error}` with code PLUGIN_ERROR naming the plugin, with its
 * stack; `llm-retry` does not retry it. Transport failures keep their own codes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, createUserMessage, definePlugin, LlmAdapter, StreamPump, type AnySessionEvent, type GenerateOptions, type Harness, type StreamChunk } from '../../runtime/index.ts';
import { projectRoot } from '../support/fixture-server.ts';

class ThrowingAdapter extends LlmAdapter {
  async *stream(_options: GenerateOptions): AsyncIterable<StreamChunk> {
    yield { type: 'text-delta', index: 0, text: 'so far' };
    const missing = undefined as unknown as { text: string };
    yield { type: 'text-delta', index: 0, text: missing.text }; // TypeError: a bug in the adapter
  }
}

/** An SDK-style adapter on the kit whose parser has a bug. */
class BuggyParserAdapter extends LlmAdapter {
  stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    const out: StreamChunk[] = [];
    return new StreamPump<{ n: number }>({
      provider: options.provider,
      signal: options.signal,
      idleMs: 5000,
      open: async () =>
        (async function* () {
          yield { n: 1 };
          yield { n: 2 };
        })(),
      parser: {
        out,
        push(event) {
          if (event.n === 2) (null as unknown as { index: number }).index;
          out.push({ type: 'text-delta', index: 0, text: 'a' });
        },
        finish() {
          out.push({ type: 'finish', finish: { kind: 'stop' } });
        },
      },
      mapError: (error) => {
        throw error;
      },
    });
  }
}

class NetworkFailureAdapter extends LlmAdapter {
  async *stream(): AsyncIterable<StreamChunk> {
    yield { type: 'text-delta', index: 0, text: 'x' };
    throw new TypeError('terminated', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });
  }
}

let harness: Harness | undefined;
let dir: string | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function withAdapter(adapter: LlmAdapter, extra: { plugin: ReturnType<typeof definePlugin> }[] = [], retry = false) {
  dir = mkdtempSync(join(tmpdir(), 'harness-plugin-error-'));
  harness = await createHarness({
    dataDir: join(dir, 'data'),
    config: {
      defaults: { provider: 'p', model: 'm' },
      plugins: [
        { plugin: definePlugin({ name: 'buggy-adapter', setup: (ctx) => void ctx.llm.registerAdapter(['p'], adapter) }) },
        ...(retry ? [{ module: join(projectRoot, 'plugins/llm-retry/index.ts'), config: { mode: 'always', initialDelayMs: 1, maxDelayMs: 1 } }] : []),
        ...extra,
      ],
    },
  });
  return harness;
}

async function finishOf(h: Harness) {
  const chunks: StreamChunk[] = [];
  for await (const chunk of h.llm.stream({ provider: 'p', model: 'm', messages: [createUserMessage('hi')] })) chunks.push(chunk);
  return chunks.at(-1) as Extract<StreamChunk, { type: 'finish' }>;
}

describe('PLUGIN_ERROR', () => {
  it('a TypeError in an adapter → finish{error, PLUGIN_ERROR} naming the plugin, with the stack', async () => {
    const finish = await finishOf(await withAdapter(new ThrowingAdapter()));
    expect(finish.finish.kind).toBe('error');
    const failure = (finish.finish as { failure: Record<string, unknown> }).failure;
    expect(failure).toMatchObject({ code: 'PLUGIN_ERROR', plugin: 'buggy-adapter', errorName: 'TypeError' });
    expect(failure.message).toMatch(/^Plugin "buggy-adapter" \(the adapter for provider "p"\) failed with TypeError/);
    expect(failure.stack).toMatch(/ThrowingAdapter/);
  });

  it('a TypeError in a parser on the adapter kit → PLUGIN_ERROR (the kit no longer calls it UNKNOWN)', async () => {
    const adapter = new BuggyParserAdapter();
    // the kit's own mapping, as an SDK adapter's mapError would call it
    const { mapSdkFailure } = await import('../../runtime/index.ts');
    class Never extends Error {}
    const sdk = { APIUserAbortError: Never, APIConnectionTimeoutError: Never, APIConnectionError: Never, APIError: Never };
    const mapped = mapSdkFailure(new TypeError("Cannot read properties of null (reading 'index')"), 'p', sdk, () => {
      throw new Error('not an API error');
    });
    expect(mapped.code).toBe('PLUGIN_ERROR');
    expect(
      mapSdkFailure(new TypeError('terminated', { cause: Object.assign(new Error('x'), { code: 'UND_ERR_SOCKET' }) }), 'p', sdk, () => {
        throw new Error();
      }).code,
    ).toBe('TRANSPORT');
    const finish = await finishOf(await withAdapter(adapter));
    expect((finish.finish as { failure: { code: string; plugin?: string } }).failure).toMatchObject({ code: 'PLUGIN_ERROR', plugin: 'buggy-adapter' });
  });

  it('a broken connection (undici TypeError "terminated") stays TRANSPORT', async () => {
    const finish = await finishOf(await withAdapter(new NetworkFailureAdapter()));
    expect((finish.finish as { failure: { code: string } }).failure.code).not.toBe('PLUGIN_ERROR');
  });

  it('in a session with llm-retry (mode always): an adapter bug is journaled as the finish, not retried', async () => {
    const h = await withAdapter(new ThrowingAdapter(), [], true);
    const session = await h.createSession({ cwd: dir! });
    const events: AnySessionEvent[] = [];
    for await (const event of session.run('go')) events.push(event);
    expect(events.filter((e) => e.type === 'llm/retry')).toEqual([]);
    const end = events.find((e) => e.type === 'turn/end') as unknown as { data: { reason: string; failure: { code: string; plugin: string } } };
    expect(end.data).toMatchObject({ reason: 'error', failure: { code: 'PLUGIN_ERROR', plugin: 'buggy-adapter' } });
  });

  it('a TypeError in an llm/stream middleware → the call ends finish{error, PLUGIN_ERROR} naming it; not retried', async () => {
    const buggy = definePlugin({
      name: 'buggy-middleware',
      setup(ctx) {
        ctx.on('llm/stream', async function* (request, next) {
          for await (const chunk of next(request)) {
            if (chunk.type === 'text-delta') (undefined as unknown as { x: number }).x;
            yield chunk;
          }
        });
      },
    });
    class OkAdapter extends LlmAdapter {
      async *stream(): AsyncIterable<StreamChunk> {
        yield { type: 'text-delta', index: 0, text: 'hello' };
        yield { type: 'finish', finish: { kind: 'stop' } };
      }
    }
    const h = await withAdapter(new OkAdapter(), [{ plugin: buggy }], true);
    const session = await h.createSession({ cwd: dir! });
    const events: AnySessionEvent[] = [];
    for await (const event of session.run('go')) events.push(event);
    expect(events.filter((e) => e.type === 'llm/retry')).toEqual([]);
    const chunks = events.filter((e) => e.type === 'assistant/chunk').map((e) => (e.data as { chunk: StreamChunk }).chunk);
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', finish: { kind: 'error', failure: { code: 'PLUGIN_ERROR', plugin: 'buggy-middleware', errorName: 'TypeError' } } });
    const end = events.find((e) => e.type === 'turn/end') as unknown as { data: { reason: string; failure: { code: string; stack?: string } } };
    expect(end.data.failure.code).toBe('PLUGIN_ERROR');
    expect(end.data.failure.stack).toMatch(/TypeError/);
  });
});
