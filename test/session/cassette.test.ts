import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import replayPlugin, { createCassette, loadCassette, matchesRecorded, type Cassette } from '../../plugins/llm-replay/index.ts';
import { assembleChunks, createHarness, HarnessError, importDshSession, writeImportedSession, type GenerateOptions, type Harness, type RecordedCall, type StreamChunk } from '../../runtime/index.ts';
import { createJournal } from '../../runtime/internal.ts';
import { dshRoot, dshSessionFiles, tempDataDir } from './support.ts';

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.dispose();
});

async function harnessWith(config: Record<string, unknown>): Promise<Harness> {
  const harness = await createHarness({ config: { plugins: [{ plugin: replayPlugin, config }] } });
  harness.kernel.bus.add('kernel/diagnostic', () => undefined); // replay-state degrade notices are expected
  harnesses.push(harness);
  return harness;
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

/** The request a loop would make for a recorded call: its provider/model and the surface at that point. */
function requestFor(call: RecordedCall, overrides: Partial<GenerateOptions> = {}): GenerateOptions {
  const tools = Array.isArray(call.header?.tools) ? call.header!.tools : [];
  return {
    provider: call.header!.config.provider,
    model: call.header!.config.model,
    messages: call.stateBefore().messages,
    tools,
    ...(typeof call.header?.system === 'string' ? { system: call.header.system } : {}),
    ...overrides,
  };
}

describe('llm-replay: a journal as a cassette', () => {
  describe.each(dshSessionFiles())('$name', ({ path }) => {
    let cassette: Cassette;
    beforeAll(async () => {
      cassette = createCassette((await importDshSession(path)).events);
    });

    it('replays every recorded call through llm/stream exactly (the same chunk objects, in order)', async () => {
      const harness = await harnessWith({ cassette, provider: 'deepseek-official' });
      expect(harness.ctx.cassette).toBe(cassette);
      for (const call of cassette.calls) {
        const chunks = await collect(harness.llm.stream(requestFor(call)));
        if (call.finish === undefined) {
          // The recording cut this call (a cancelled stream): its chunks, then an aborted finish.
          expect(chunks.slice(0, -1)).toEqual(call.chunks);
          expect(chunks.at(-1)).toMatchObject({ type: 'finish', finish: { kind: 'aborted', failure: { code: 'ABORTED' } } });
        } else {
          expect(chunks).toHaveLength(call.chunks.length);
          for (const [i, chunk] of chunks.entries()) expect(chunk).toBe(call.chunks[i]);
        }
        if (call.message !== undefined && !call.message.data.interrupted) {
          const assembled = assembleChunks(chunks);
          expect(assembled.content).toEqual(call.message.data.message.content);
          expect(assembled.replayState).toEqual(call.message.data.message.source.replayState);
        }
      }
      expect(() => cassette.assertConsumed()).not.toThrow();
      cassette.reset();
    });
  });

  it('serves the finish chunk with its full replay envelope', async () => {
    const cassette = createCassette((await importDshSession(join(dshRoot, 'acp-agent/max-tokens-continue/session.jsonl'))).events);
    const harness = await harnessWith({ cassette, provider: 'deepseek-official' });
    const chunks = await collect(harness.llm.stream(requestFor(cassette.calls[0]!)));
    const finish = chunks.at(-1) as Extract<StreamChunk, { type: 'finish' }>;
    expect(finish.finish).toEqual({ kind: 'max-tokens' });
    expect(finish.replayState).toMatchObject({ response: { kind: 'pi-ai', version: 2 }, blocks: [{ type: 'text' }, { type: 'tool-call' }] });
  });

  it('a request that differs from the recording fails loudly with a readable diff, and is not consumed', async () => {
    const cassette = createCassette((await importDshSession(join(dshRoot, 'headless-agent/pty-tools/session.jsonl'))).events);
    const harness = await harnessWith({ cassette, provider: 'deepseek-official' });
    const call = cassette.calls[0]!;
    const chunks = await collect(harness.llm.stream(requestFor(call, { model: 'gpt-x', messages: call.stateBefore().messages.slice(1), tools: [{ name: 'bash', description: '', inputSchema: {} }] })));
    expect(chunks).toHaveLength(1);
    const finish = chunks[0] as Extract<StreamChunk, { type: 'finish' }>;
    expect(finish.finish.kind).toBe('error');
    const failure = (finish.finish as { failure: { code: string; message: string } }).failure;
    expect(failure.code).toBe('CASSETTE_MISMATCH');
    expect(failure.message).toContain('differs from recorded call 1 (turn 1, step 1');
    expect(failure.message).toContain('model:    recorded "deepseek-v4-flash", requested "gpt-x"');
    expect(failure.message).toMatch(/tools: {4}recorded \[bash, edit, .*\], requested \[bash\] \(missing edit, /);
    expect(failure.message).toContain(`messages: recorded ${call.messageCount}, requested ${call.messageCount - 1}`);
    expect(cassette.unconsumed()).toHaveLength(cassette.calls.length);
    // A recorded provider is compared too (unless the request comes on an alias route).
    expect(() => cassette.take(requestFor(call, { provider: 'openai' }))).toThrow(/provider: recorded "deepseek-official", requested "openai"/);
    // The right request is then served.
    const served = await collect(harness.llm.stream(requestFor(call)));
    expect(served).toEqual(call.chunks);
  });

  it('assertConsumed lists the calls never requested (and the mismatches)', async () => {
    const cassette = createCassette((await importDshSession(join(dshRoot, 'acp-agent/empty-response-retry/session.jsonl'))).events);
    const harness = await harnessWith({ cassette, provider: 'deepseek-official' });
    await collect(harness.llm.stream(requestFor(cassette.calls[0]!, { model: 'other' })));
    let caught: unknown;
    try {
      cassette.assertConsumed();
    } catch (error) {
      caught = error;
    }
    expect(HarnessError.is(caught) && caught.code).toBe('CASSETTE_UNCONSUMED');
    const message = (caught as Error).message;
    expect(message).toContain('2 of 2 recorded model call(s) were never requested');
    expect(message).toContain('call 1 (turn 1, step 1; seq 10-11: 2 chunks, finish error)');
    expect(message).toContain('call 2 (turn 1, step 1, attempt 2; seq 14-18: 5 chunks, finish stop)');
    expect(message).toContain('model:    recorded "deepseek-v4-flash", requested "other"');
    // Past the last call, a request is a mismatch too.
    cassette.reset();
    for (const call of cassette.calls) await collect(harness.llm.stream(requestFor(call)));
    const extra = await collect(harness.llm.stream(requestFor(cassette.calls[0]!)));
    expect(extra[0]).toMatchObject({ type: 'finish', finish: { kind: 'error', failure: { code: 'CASSETTE_MISMATCH', message: expect.stringContaining('no unused model call') } } });
  });

  it('keys calls by the live session (turn, step) when the request names a session journaling on this harness', async () => {
    const data = tempDataDir('session-cassette');
    try {
      const cassette = createCassette((await importDshSession(join(dshRoot, 'acp-agent/tool-call-turn/session.jsonl'))).events);
      const harness = await harnessWith({ cassette, provider: 'deepseek-official' });
      const journal = await createJournal({ dataDir: data.dir, bus: harness.kernel.bus });
      await journal.append('turn/start', { turn: 1 });
      await journal.append('step/start', { turn: 1, step: 2 });
      const step2 = cassette.calls.find((c) => c.step === 2)!;
      const chunks = await collect(harness.llm.stream(requestFor(step2, { sessionId: journal.id })));
      expect(chunks).toEqual(step2.chunks);
      expect(cassette.unconsumed().map((c) => c.step)).toEqual([1]);
      await journal.close();
    } finally {
      data.cleanup();
    }
  });

  it('loads a cassette from a journal path — a Harness journal or a DeepSeek Harness file — on an alias route', async () => {
    const data = tempDataDir('session-cassette');
    try {
      const source = join(dshRoot, 'acp-agent/multi-turn/session.jsonl');
      const written = await writeImportedSession(source, { dataDir: data.dir, id: 'multi' });
      for (const journal of [written.path, source]) {
        const harness = await harnessWith({ journal });
        const cassette = harness.ctx.cassette!;
        expect(cassette.calls).toHaveLength(2);
        for (const call of cassette.calls) {
          // Default route 'replay' is an alias: the provider is not compared, the model is.
          const chunks = await collect(harness.llm.stream(requestFor(call, { provider: 'replay' })));
          expect(chunks).toEqual(call.chunks);
        }
        cassette.assertConsumed();
        await harness.dispose();
        harnesses.pop();
      }
      expect((await loadCassette(written.path)).calls).toHaveLength(2);
    } finally {
      data.cleanup();
    }
  });

  it('placeholders match anything', () => {
    expect(matchesRecorded('{{tools}}', undefined)).toBe(true);
    expect(matchesRecorded('{{system}}', 'You are …')).toBe(true);
    expect(matchesRecorded('<path>{{cwd}}/a.txt</path>', '<path>/home/x/a.txt</path>')).toBe(true);
    expect(matchesRecorded('<path>{{cwd}}/a.txt</path>', '<path>/home/x/b.txt</path>')).toBe(false);
    expect(matchesRecorded('deepseek-v4-flash', 'deepseek-v4-pro')).toBe(false);
  });

  // Re-running imported dsh sessions with tool calls through the agent loop on llm-replay (the fold
  // of the new run's model messages equals the recorded ones): test/agent/dsh-cassette.test.ts.
});
