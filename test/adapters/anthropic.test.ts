/**
 * llm-anthropic: every recorded stream of anthropic/ through the fixture server and the REAL
 * `@anthropic-ai/sdk`, asserted against SOURCES.md; the overloaded `event: error` fragment appended
 * to real streams; faults; thinking-signature / redacted-data round trip; request bodies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAssistantMessage, createHarness, createMessage, createToolResultMessage, createUserMessage, isRetryableCode, type AssembledMessage, type Message } from '../../runtime/index.ts';
import type { AnthropicAdapter } from '../../plugins/llm-anthropic/adapter.ts';
import { providerErrorBody, readFixture, splitSseFrames, sseFrame } from '../support/fixture-server.ts';
import { adapterOf, ANTHROPIC_PLUGIN, checkBlockProtocol, finishOf, reasoningOf, run, startRig, TEST_KEY_ENV, textOf, toolCallsOf, type Rig } from './helpers.ts';

let rig: Rig;

beforeAll(async () => {
  rig = await startRig(ANTHROPIC_PLUGIN, (server) => ({
    providers: {
      anthropic: {
        baseURL: server.anthropicBaseURL,
        apiKeyEnv: TEST_KEY_ENV,
        allowUnknownModels: true,
        models: [
          { id: 'claude-test-budget', maxOutputTokens: 32_000, reasoningEfforts: ['low', 'high'], thinking: 'budget' },
          { id: 'claude-test-adaptive', maxOutputTokens: 64_000, reasoningEfforts: ['low', 'max'], thinking: 'adaptive' },
        ],
      },
      proxy: { baseURL: server.anthropicBaseURL, apiKeyEnv: TEST_KEY_ENV, allowUnknownModels: true, idleTimeoutMs: 300 },
    },
  }));
});
afterAll(async () => {
  await rig?.close();
});

const MODEL = 'claude-test';

async function serve(fixture: string | { body: string }, provider = 'anthropic') {
  rig.server.enqueue(fixture);
  const { chunks, result } = await run(rig.harness, { provider, model: MODEL });
  checkBlockProtocol(chunks);
  const finish = finishOf(chunks);
  if (finish.finish.kind !== 'error' && finish.finish.kind !== 'aborted') {
    expect(finish.replayState?.blocks).toHaveLength(chunks.filter((c) => c.type === 'block-start').length);
    expect(finish.replayState?.response).toMatchObject({ kind: 'anthropic', version: 1 });
  }
  return { chunks, result, finish };
}

function failureOf(result: AssembledMessage) {
  expect(result.finish.kind === 'error' || result.finish.kind === 'aborted').toBe(true);
  return (result.finish as { failure: Record<string, unknown> & { code: string; message: string } }).failure;
}

const usage = (input: number, output: number) => ({ inputTokens: input, cacheReadTokens: 0, cacheWriteTokens: 0, outputTokens: output });

/** A field of the `content_block_start` / delta events of a fixture (raw .sse or chunk list). */
function events(fixture: string): { type: string; index?: number; content_block?: Record<string, string>; delta?: Record<string, string> }[] {
  const text = readFixture(fixture);
  const lines = fixture.endsWith('.jsonl')
    ? text.split('\n').filter((l) => l.trim() !== '')
    : text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6));
  return lines.map((line) => JSON.parse(line));
}

function signatureOf(fixture: string): string {
  return events(fixture)
    .filter((e) => e.type === 'content_block_delta' && e.delta?.type === 'signature_delta')
    .map((e) => e.delta!.signature)
    .join('');
}

describe('anthropic fixtures (SOURCES.md expected outcomes)', () => {
  it('19. text then tool_use with input_json_delta; no trailing newline (message_stop never seen)', async () => {
    const { result } = await serve('anthropic/text-then-tool-use-input-json-delta.sse');
    expect(result.content.map((b) => b.type)).toEqual(['text', 'tool-call']);
    expect(textOf(result)).toBe("I'll check the current weather in Paris for you.");
    expect(toolCallsOf(result)).toEqual([{ id: 'toolu_01NRLabsLyVHZPKxbKvkfSMn', name: 'get_weather', arguments: '{"location": "Paris"}' }]);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual(usage(377, 65));
  });

  it('20. max_tokens in the middle of a tool_use: the call is dropped, no block-end for it', async () => {
    const { result, chunks } = await serve('anthropic/max-tokens-mid-tool-use.sse');
    expect(result.content).toEqual([{ type: 'text', text: "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now." }]);
    expect(toolCallsOf(result)).toEqual([]);
    expect(result.droppedToolCallCount).toBe(1);
    const toolStart = chunks.find((c) => c.type === 'block-start' && c.blockType === 'tool-call');
    expect(toolStart).toMatchObject({ index: 1, id: 'toolu_01EKqbqmZrGRXy18eN7m9kvY', name: 'make_file' });
    expect(chunks.some((c) => c.type === 'block-end' && c.index === 1)).toBe(false);
    const partial = chunks
      .filter((c) => c.type === 'tool-call-delta')
      .map((c) => (c as { arguments?: string }).arguments ?? '')
      .join('');
    expect(partial).toBe('{"filename": "taxes.txt", "lines_of_text": [\n"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s",\n"",\n"## INTRODUCTION",\n"",\n"Filing taxes');
    expect(result.finish).toEqual({ kind: 'max-tokens' });
    expect(result.replayState?.blocks).toEqual([null]);
    expect(result.usage).toEqual(usage(450, 124));
  });

  it('21. thinking with signature_delta, then text', async () => {
    const fixture = 'anthropic/thinking-signature-delta-then-text.sse';
    const { result } = await serve(fixture);
    expect(result.content.map((b) => b.type)).toEqual(['reasoning', 'text']);
    const reasoning = reasoningOf(result);
    expect(reasoning.startsWith('This is a straightforward question about pedestrian safety')).toBe(true);
    expect(reasoning).toHaveLength(202);
    const signature = signatureOf(fixture);
    expect(signature).toHaveLength(504);
    expect(signature.startsWith('EvMCCk')).toBe(true);
    expect(result.replayState?.blocks).toEqual([{ signature }, null]);
    const text = textOf(result);
    expect(text.startsWith('Here are the basic steps for safely crossing the street:')).toBe(true);
    expect(text).toHaveLength(1021);
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual(usage(43, 282));
  });

  it('22. two redacted_thinking blocks (data kept verbatim, in order), pings, then text', async () => {
    const fixture = 'anthropic/redacted-thinking-two-blocks-then-text.sse';
    const { result } = await serve(fixture);
    expect(result.content.slice(0, 2)).toEqual([
      { type: 'reasoning', text: '', redacted: true },
      { type: 'reasoning', text: '', redacted: true },
    ]);
    const data = events(fixture)
      .filter((e) => e.type === 'content_block_start' && e.content_block?.type === 'redacted_thinking')
      .map((e) => e.content_block!.data);
    expect(data.map((d) => d!.length)).toEqual([744, 296]);
    expect(result.replayState?.blocks).toEqual([{ data: data[0] }, { data: data[1] }, null]);
    const text = textOf(result);
    expect(text.startsWith("I notice that you've sent what appears to be some kind of test string")).toBe(true);
    expect(text).toHaveLength(359);
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual(usage(92, 189));
  });

  it('24. text with a ping after content_block_start', async () => {
    const { result } = await serve('anthropic/text-with-ping.chunks.jsonl');
    expect(result.content).toEqual([{ type: 'text', text: "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?" }]);
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual(usage(12, 30));
  });

  it('25. tool_use with an empty input → arguments {}', async () => {
    const { result, chunks } = await serve('anthropic/tool-use-empty-input.chunks.jsonl');
    expect(textOf(result)).toBe("I'll update the issue list for you.");
    expect(toolCallsOf(result)).toEqual([{ id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', name: 'updateIssueList', arguments: '{}' }]);
    // The deltas are the content (StreamChunkMap): `{}` goes as a delta, block-end carries none.
    expect(chunks.filter((c) => c.type === 'tool-call-delta' && c.index === 1)).toEqual([{ type: 'tool-call-delta', index: 1, arguments: '{}' }]);
    expect(chunks.find((c) => c.type === 'block-end' && c.index === 1)).toEqual({ type: 'block-end', index: 1 });
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual(usage(565, 48));
  });

  it('26. thinking ending with an empty thinking_delta, signature, text', async () => {
    const fixture = 'anthropic/thinking-signature-then-text.chunks.jsonl';
    const { result } = await serve(fixture);
    expect(result.content).toEqual([
      { type: 'reasoning', text: 'The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185' },
      { type: 'text', text: '925 ÷ 5 = 185' },
    ]);
    const signature = signatureOf(fixture);
    expect(signature).toHaveLength(332);
    expect(result.replayState?.blocks).toEqual([{ signature }, null]);
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual(usage(69, 53));
  });
});

describe('overloaded error event after HTTP 200 (fragment 28)', () => {
  const overloaded = () => readFixture('anthropic/error-event-overloaded.data-payload.fragment.txt').trim();

  it('appended mid tool call: retryable SERVER error, text kept, no partial tool call', async () => {
    const frames = splitSseFrames(readFixture('anthropic/text-then-tool-use-input-json-delta.sse'));
    const body = frames.slice(0, 10).join('') + sseFrame(overloaded(), 'error');
    const { result, chunks } = await serve({ body });
    expect(chunks.some((c) => c.type === 'tool-call-delta')).toBe(true);
    expect(result.finish.kind).toBe('error');
    const failure = failureOf(result);
    expect(failure).toMatchObject({ code: 'SERVER', providerCode: 'overloaded_error', providerType: 'overloaded_error' });
    expect(failure.status).toBeUndefined();
    expect(failure.message).toContain('Overloaded');
    expect(result.content).toEqual([{ type: 'text', text: "I'll check the current weather in Paris for you." }]);
    expect(toolCallsOf(result)).toEqual([]);
    const prepared = await rig.harness.llm.prepareCall({ provider: 'anthropic', model: MODEL });
    expect(isRetryableCode(prepared.retryPolicy, failure.code)).toBe(true);
  });

  it('appended mid thinking: the partial reasoning is kept', async () => {
    const frames = splitSseFrames(readFixture('anthropic/thinking-signature-delta-then-text.sse'));
    const { result } = await serve({ body: frames.slice(0, 8).join('') + sseFrame(overloaded(), 'error') });
    expect(failureOf(result).code).toBe('SERVER');
    expect(result.content).toHaveLength(1);
    expect(result.content[0]!.type).toBe('reasoning');
    expect(reasoningOf(result).length).toBeGreaterThan(0);
  });
});

describe('anthropic faults', () => {
  it('429 retry-after 7 → RATE_LIMIT 7000 ms; 401 → AUTH; 529 → SERVER; 500 → SERVER', async () => {
    rig.server.enqueue({ status: 429, headers: { 'retry-after': '7' }, json: providerErrorBody('anthropic', 429) });
    expect(failureOf((await run(rig.harness, { provider: 'anthropic', model: MODEL })).result)).toMatchObject({ code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 7000 });
    rig.server.enqueue({ status: 401, json: providerErrorBody('anthropic', 401) });
    expect(failureOf((await run(rig.harness, { provider: 'anthropic', model: MODEL })).result)).toMatchObject({ code: 'AUTH', status: 401, providerType: 'authentication_error' });
    rig.server.enqueue({ status: 529, json: providerErrorBody('anthropic', 529) });
    expect(failureOf((await run(rig.harness, { provider: 'anthropic', model: MODEL })).result)).toMatchObject({ code: 'SERVER', status: 529, providerType: 'overloaded_error' });
    rig.server.enqueue({ status: 500, json: providerErrorBody('anthropic', 500) });
    expect(failureOf((await run(rig.harness, { provider: 'anthropic', model: MODEL })).result)).toMatchObject({ code: 'SERVER', status: 500 });
  });

  it('400 "prompt is too long" → CONTEXT_WINDOW_EXCEEDED; other 400 → INVALID_REQUEST', async () => {
    rig.server.enqueue({ status: 400, json: providerErrorBody('anthropic', 400, 'prompt is too long: 212345 tokens > 200000 maximum') });
    expect(failureOf((await run(rig.harness, { provider: 'anthropic', model: MODEL })).result)).toMatchObject({ code: 'CONTEXT_WINDOW_EXCEEDED', status: 400 });
    rig.server.enqueue({ status: 400, json: providerErrorBody('anthropic', 400, 'messages: roles must alternate') });
    expect(failureOf((await run(rig.harness, { provider: 'anthropic', model: MODEL })).result)).toMatchObject({ code: 'INVALID_REQUEST', status: 400 });
  });

  it('socket cut after half the bytes → TRANSPORT; a body that ends before stop_reason → TRANSPORT', async () => {
    const fixture = 'anthropic/text-then-tool-use-input-json-delta.sse';
    rig.server.enqueue({ fixture, closeAfterBytes: Math.floor(Buffer.byteLength(readFixture(fixture)) / 2) });
    const cut = await run(rig.harness, { provider: 'anthropic', model: MODEL });
    expect(failureOf(cut.result).code).toBe('TRANSPORT');
    expect(toolCallsOf(cut.result)).toEqual([]);
    rig.server.enqueue({ body: splitSseFrames(readFixture(fixture)).slice(0, 6).join('') });
    expect(failureOf((await run(rig.harness, { provider: 'anthropic', model: MODEL })).result).code).toBe('TRANSPORT');
  });

  it('abort mid-stream → aborted finish, promptly', async () => {
    rig.server.enqueue({ fixture: 'anthropic/thinking-signature-delta-then-text.sse', frameDelayMs: 10 });
    const controller = new AbortController();
    const prepared = await rig.harness.llm.prepareCall({ provider: 'anthropic', model: MODEL });
    const chunks = [];
    const t0 = Date.now();
    for await (const chunk of prepared.stream({ ...prepared.config, messages: [createUserMessage('x')], signal: controller.signal })) {
      chunks.push(chunk);
      if (chunks.filter((c) => c.type === 'reasoning-delta').length === 4) controller.abort();
    }
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(finishOf(chunks).finish).toMatchObject({ kind: 'aborted', failure: { code: 'ABORTED' } });
  });

  it('idle timeout: headers then silence → TIMEOUT, promptly', async () => {
    rig.server.enqueue({ hang: true });
    const t0 = Date.now();
    const { result } = await run(rig.harness, { provider: 'proxy', model: MODEL });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(failureOf(result)).toMatchObject({ code: 'TIMEOUT', idleTimeoutMs: 300 });
  });

  it('missing API key: the plugin loads; prepareCall (preflight) fails with AUTH naming the variable', async () => {
    const variable = 'HARNESS_TEST_MISSING_ANTHROPIC_KEY';
    delete process.env[variable];
    const harness = await createHarness({ config: { plugins: [{ module: ANTHROPIC_PLUGIN, config: { providers: { anthropic: { apiKeyEnv: variable } } } }] } });
    try {
      const refused = await harness.llm.prepareCall({ provider: 'anthropic', model: 'claude-sonnet-5-5' }).then(
        () => undefined,
        (error: unknown) => error as { code: string; message: string },
      );
      expect(refused?.code).toBe('AUTH');
      expect(refused?.message).toContain(variable);
      expect(refused?.message).not.toContain('\n');
    } finally {
      await harness.dispose();
    }
  });
});

describe('thinking signature / redacted data round trip', () => {
  /** A thinking + tool_use turn built from real frames: the thinking block of fixture 26, the tool_use block of fixture 25. */
  function thinkingThenTool(): string {
    const thinking = events('anthropic/thinking-signature-then-text.chunks.jsonl');
    const tool = events('anthropic/tool-use-empty-input.chunks.jsonl');
    const parts = [
      thinking[0]!,
      ...thinking.filter((e) => e.index === 0 && e.type.startsWith('content_block')),
      ...tool.filter((e) => e.index === 1 && e.type.startsWith('content_block')),
      tool.find((e) => e.type === 'message_delta')!,
      { type: 'message_stop' },
    ];
    return parts.map((e) => sseFrame(e, e.type)).join('');
  }

  const toolSpec = { name: 'updateIssueList', description: 'Update the list.', inputSchema: { type: 'object', properties: {} } };

  it('the next request carries the thinking text + signature and the redacted data byte-exact', async () => {
    rig.server.enqueue({ body: thinkingThenTool() });
    const first = await run(rig.harness, { provider: 'anthropic', model: MODEL }, { tools: [toolSpec] });
    expect(first.result.content.map((b) => b.type)).toEqual(['reasoning', 'tool-call']);
    expect(first.result.finish).toEqual({ kind: 'tool-calls' });
    const signature = signatureOf('anthropic/thinking-signature-then-text.chunks.jsonl');

    rig.server.enqueue('anthropic/redacted-thinking-two-blocks-then-text.sse');
    const second = await run(rig.harness, { provider: 'anthropic', model: MODEL });
    const data = (second.result.replayState!.blocks as { data?: string }[]).slice(0, 2).map((e) => e.data!);

    const history: Message[] = [
      createUserMessage('What is 925 / 5? Then update the list.'),
      createAssistantMessage({ content: first.result.content, provider: 'anthropic', model: MODEL, replayState: first.result.replayState }),
      createToolResultMessage({ callId: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', content: 'updated' }),
      createAssistantMessage({ content: second.result.content, provider: 'anthropic', model: MODEL, replayState: second.result.replayState }),
      createUserMessage('Go on.'),
    ];
    rig.server.enqueue('anthropic/text-with-ping.chunks.jsonl');
    await run(rig.harness, { provider: 'anthropic', model: MODEL }, { messages: history, tools: [toolSpec] });
    const request = rig.server.requests.at(-1)!;
    expect(request.path).toBe('/v1/messages');
    expect(request.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'What is 925 / 5? Then update the list.' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185', signature },
          { type: 'tool_use', id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', name: 'updateIssueList', input: {} },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', content: 'updated' }] },
      {
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: data[0] },
          { type: 'redacted_thinking', data: data[1] },
          { type: 'text', text: textOf(second.result) },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'Go on.' }] },
    ]);
    expect(request.rawBody).toContain(JSON.stringify(signature));
    expect(request.rawBody).toContain(JSON.stringify(data[0]));
  });

  it('none of it when the history came from another adapter kind or provider (degrade reported once)', async () => {
    rig.server.enqueue({ body: thinkingThenTool() });
    const first = await run(rig.harness, { provider: 'anthropic', model: MODEL });
    const adapter = adapterOf<AnthropicAdapter>(rig.harness, 'anthropic');
    const foreignKind = createAssistantMessage({
      content: first.result.content,
      provider: 'anthropic',
      model: MODEL,
      replayState: { response: { kind: 'openai-chat', version: 1 }, blocks: [{ field: 'reasoning_content' }, null] },
    });
    const otherProvider = createAssistantMessage({ content: first.result.content, provider: 'proxy', model: MODEL, replayState: first.result.replayState });
    const oldVersion = createAssistantMessage({
      content: first.result.content,
      provider: 'anthropic',
      model: MODEL,
      replayState: { ...first.result.replayState!, response: { kind: 'anthropic', version: 0 } },
    });
    for (const message of [foreignKind, otherProvider, oldVersion]) {
      const before = adapter.degradeCount;
      for (let i = 0; i < 2; i++) {
        rig.server.enqueue('anthropic/text-with-ping.chunks.jsonl');
        await run(
          rig.harness,
          { provider: 'anthropic', model: MODEL },
          { messages: [createUserMessage('q'), message, createToolResultMessage({ callId: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', content: 'ok' })] },
        );
        const request = rig.server.requests.at(-1)!;
        expect(request.body.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', name: 'updateIssueList', input: {} }] });
        expect(request.rawBody).not.toContain('signature');
      }
      expect(adapter.degradeCount).toBe(before + 1);
      expect(adapter.lastDegrade?.messageId).toBe(message.id);
    }
  });

  it('a malformed envelope of the right kind is degraded (validateReplayState)', async () => {
    const adapter = adapterOf<AnthropicAdapter>(rig.harness, 'anthropic');
    const before = adapter.degradeCount;
    const message = createAssistantMessage({
      content: [
        { type: 'reasoning', text: '', redacted: true },
        { type: 'text', text: 'hi' },
      ],
      provider: 'anthropic',
      model: MODEL,
      replayState: { response: { kind: 'anthropic', version: 1 }, blocks: [{ signature: 'x' }, null] },
    });
    rig.server.enqueue('anthropic/text-with-ping.chunks.jsonl');
    await run(rig.harness, { provider: 'anthropic', model: MODEL }, { messages: [createUserMessage('q'), message, createUserMessage('again')] });
    expect(rig.server.requests.at(-1)!.body.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'hi' }] });
    expect(adapter.degradeCount).toBe(before + 1);
    expect(adapter.lastDegrade?.reason).toBe('malformed');
  });
});

describe('anthropic request serialisation', () => {
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  const tool = { name: 'search', description: 'Search the web.', inputSchema: { type: 'object', properties: { q: { type: 'string' }, n: { type: 'integer', default: 3 } }, required: ['q'] } };

  it('system, images, tools, tool results (error, images), thinking effort, max_tokens, stop', async () => {
    const history: Message[] = [
      createMessage({ role: 'system', content: 'Prefer metric units.', source: { kind: 'user' } }),
      createUserMessage([
        { type: 'text', text: 'What is this?' },
        { type: 'image', mediaType: 'image/png', data: png },
        { type: 'image', mediaType: 'image/jpeg', url: 'https://example.com/a.jpg' },
      ]),
      createAssistantMessage({
        provider: 'other',
        model: 'x',
        content: [
          { type: 'reasoning', text: 'hmm' },
          { type: 'text', text: 'Let me search.' },
          { type: 'tool-call', id: 't1', name: 'search', arguments: '{"q":"png"}' },
          { type: 'tool-call', id: 't2', name: 'search', arguments: 'not json' },
        ],
      }),
      createToolResultMessage({
        callId: 't1',
        content: [
          { type: 'text', text: 'found' },
          { type: 'image', mediaType: 'image/png', data: png },
        ],
      }),
      createToolResultMessage({ callId: 't2', content: 'bad arguments', isError: true }),
      createUserMessage('And?'),
    ];
    rig.server.enqueue('anthropic/text-with-ping.chunks.jsonl');
    await run(
      rig.harness,
      { provider: 'anthropic', model: 'claude-test-budget', reasoningEffort: 'low', maxTokens: 4000, temperature: 0.3, stop: ['###'] },
      { system: 'Be helpful.', tools: [tool], messages: history },
    );
    const request = rig.server.requests.at(-1)!;
    expect(request.headers['anthropic-version']).toBeDefined();
    const body = request.body;
    expect(body).toMatchObject({
      model: 'claude-test-budget',
      max_tokens: 4000,
      stream: true,
      system: 'Be helpful.\n\nPrefer metric units.',
      thinking: { type: 'enabled', budget_tokens: 2048 },
      stop_sequences: ['###'],
    });
    expect(body.temperature).toBeUndefined(); // thinking on
    expect(body.tools).toEqual([{ name: 'search', description: 'Search the web.', input_schema: tool.inputSchema }]);
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/a.jpg' } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me search.' },
          { type: 'tool_use', id: 't1', name: 'search', input: { q: 'png' } },
          { type: 'tool_use', id: 't2', name: 'search', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 't1',
            content: [
              { type: 'text', text: 'found' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
            ],
          },
          { type: 'tool_result', tool_use_id: 't2', content: 'bad arguments', is_error: true },
          { type: 'text', text: 'And?' },
        ],
      },
    ]);
  });

  it('max_tokens defaults to the model maximum; the budget is clamped below max_tokens; temperature without thinking', async () => {
    for (let i = 0; i < 6; i++) rig.server.enqueue('anthropic/text-with-ping.chunks.jsonl');
    await run(rig.harness, { provider: 'anthropic', model: 'claude-test-budget', temperature: 0.5 });
    expect(rig.server.requests.at(-1)!.body).toMatchObject({ max_tokens: 32_000, temperature: 0.5 });
    expect(rig.server.requests.at(-1)!.body.thinking).toBeUndefined();
    await run(rig.harness, { provider: 'anthropic', model: 'claude-test-budget', reasoningEffort: 'high', maxTokens: 5000 });
    expect(rig.server.requests.at(-1)!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 4999 });
    await run(rig.harness, { provider: 'anthropic', model: 'claude-test-budget', reasoningEffort: 'high', maxTokens: 1000 });
    expect(rig.server.requests.at(-1)!.body.thinking).toBeUndefined();
    await run(rig.harness, { provider: 'anthropic', model: 'claude-test', maxTokens: 10 });
    expect(rig.server.requests.at(-1)!.body.max_tokens).toBe(10);
    await run(rig.harness, { provider: 'anthropic', model: 'claude-test' });
    expect(rig.server.requests.at(-1)!.body.max_tokens).toBe(8192);
  });

  it('adaptive models: thinking adaptive + output_config.effort, no temperature', async () => {
    rig.server.enqueue('anthropic/text-with-ping.chunks.jsonl');
    await run(rig.harness, { provider: 'anthropic', model: 'claude-test-adaptive', reasoningEffort: 'max', temperature: 0.2 });
    const body = rig.server.requests.at(-1)!.body;
    expect(body).toMatchObject({ max_tokens: 64_000, thinking: { type: 'adaptive' }, output_config: { effort: 'max' } });
    expect(body.temperature).toBeUndefined();
  });
});
