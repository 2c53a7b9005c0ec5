/**
 * llm-openai, Chat Completions routes (OpenAI, DeepSeek, OpenAI-compatible servers): every recorded
 * stream of openai-chat/, deepseek/ and openai-compatible/ through the fixture server and the REAL
 * `openai` SDK, asserted against SOURCES.md; faults; DeepSeek reasoning round trip; request bodies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAssistantMessage, createHarness, createToolResultMessage, createUserMessage, type AssembledMessage, type Message } from '../../runtime/index.ts';
import type { OpenAIChatAdapter } from '../../plugins/llm-openai/chat.ts';
import { providerErrorBody, readFixture, splitSseFrames } from '../support/fixture-server.ts';
import { adapterOf, checkBlockProtocol, finishOf, OPENAI_PLUGIN, reasoningOf, run, startRig, TEST_KEY_ENV, textOf, toolCallsOf, type Rig } from './helpers.ts';

let rig: Rig;

beforeAll(async () => {
  rig = await startRig(OPENAI_PLUGIN, (server) => {
    const common = { baseURL: server.openaiBaseURL, apiKeyEnv: TEST_KEY_ENV };
    return {
      providers: {
        oai: { ...common, api: 'chat', compat: 'openai', models: [{ id: 'gpt-4o', inputModalities: ['text', 'image'], reasoningEfforts: ['low', 'high'] }], allowUnknownModels: true },
        deepseek: { ...common },
        compat: { ...common, api: 'chat', allowUnknownModels: true, headers: { 'x-harness-route': 'compat' } },
        slow: { ...common, api: 'chat', allowUnknownModels: true, idleTimeoutMs: 300 },
      },
    };
  });
});
afterAll(async () => {
  await rig?.close();
});

async function serve(fixture: string, provider = 'compat', model = 'm') {
  rig.server.enqueue(fixture);
  const { chunks, result } = await run(rig.harness, { provider, model });
  checkBlockProtocol(chunks);
  const finish = finishOf(chunks);
  if (finish.finish.kind === 'stop' || finish.finish.kind === 'tool-calls' || finish.finish.kind === 'max-tokens') {
    expect(finish.replayState?.blocks).toHaveLength(chunks.filter((c) => c.type === 'block-start').length);
  }
  return { chunks, result, finish };
}

function failureOf(result: AssembledMessage) {
  expect(result.finish.kind === 'error' || result.finish.kind === 'aborted').toBe(true);
  return (result.finish as { failure: Record<string, unknown> & { code: string; message: string } }).failure;
}

describe('openai-chat fixtures (SOURCES.md expected outcomes)', () => {
  it('1. text-with-include-usage: text, stop, usage from the choices:[] chunk', async () => {
    const { result } = await serve('openai-chat/text-with-include-usage.sse', 'oai', 'gpt-4o');
    const text = textOf(result);
    expect(text.startsWith("I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a rel")).toBe(true);
    expect(text).toHaveLength(159);
    expect(result.content).toHaveLength(1);
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual({ inputTokens: 14, outputTokens: 30, reasoningTokens: 0 });
  });

  it('2. parallel-tool-calls: two calls merged per index', async () => {
    const { result } = await serve('openai-chat/parallel-tool-calls-weather-and-stock.sse', 'oai', 'gpt-4o');
    expect(toolCallsOf(result)).toEqual([
      { id: 'call_JMW1whyEaYG438VE1OIflxA2', name: 'GetWeatherArgs', arguments: '{"city": "Edinburgh", "country": "GB", "units": "c"}' },
      { id: 'call_DNYTawLBoN8fj3KN6qU9N1Ou', name: 'get_stock_price', arguments: '{"ticker": "AAPL", "exchange": "NASDAQ"}' },
    ]);
    expect(textOf(result)).toBe('');
    expect(result.content).toHaveLength(2);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual({ inputTokens: 149, outputTokens: 60, reasoningTokens: 0 });
  });

  it('3. single-tool-call: header, role and refusal:null in one chunk', async () => {
    const { result } = await serve('openai-chat/single-tool-call-get-weather.sse', 'oai', 'gpt-4o');
    expect(toolCallsOf(result)).toEqual([{ id: 'call_CTf1nWJLqSeRgDqaCG27xZ74', name: 'get_weather', arguments: '{"city":"San Francisco","state":"CA"}' }]);
    expect(result.content).toHaveLength(1);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual({ inputTokens: 48, outputTokens: 19, reasoningTokens: 0 });
  });

  it('4. finish-length: truncated text, max-tokens', async () => {
    const { result } = await serve('openai-chat/finish-length-max-tokens-1.sse', 'oai', 'gpt-4o');
    expect(result.content).toEqual([{ type: 'text', text: '{"' }]);
    expect(result.finish).toEqual({ kind: 'max-tokens' });
    expect(result.usage).toEqual({ inputTokens: 79, outputTokens: 1, reasoningTokens: 0 });
  });

  it('5. refusal: a text block with refusal: true, finish stop', async () => {
    const { result } = await serve('openai-chat/refusal-structured-output.sse', 'oai', 'gpt-4o');
    expect(result.content).toEqual([{ type: 'text', text: "I'm sorry, I can't assist with that request.", refusal: true }]);
    expect(textOf(result)).toBe('');
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual({ inputTokens: 79, outputTokens: 11, reasoningTokens: 0 });
  });

  it('7. gpt4o-mini obfuscation: tool call, usage with cached 0', async () => {
    const { result } = await serve('openai-chat/gpt4o-mini-tool-call-obfuscation-usage.sse', 'oai', 'gpt-4o');
    expect(toolCallsOf(result)).toEqual([{ id: 'call_ZR5UUuTt3pf61kjwAJIYdVMj', name: 'get_capital', arguments: '{"country":"UK"}' }]);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual({ inputTokens: 53, cacheReadTokens: 0, outputTokens: 15, reasoningTokens: 0 });
  });

  it('8. text-obfuscation (chunk list): 1724 chars of text', async () => {
    const { result } = await serve('openai-chat/text-obfuscation-usage.chunks.jsonl', 'oai', 'gpt-4o');
    const text = textOf(result);
    expect(text.startsWith('**Holiday Name:** Harmony Day')).toBe(true);
    expect(text).toHaveLength(1724);
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual({ inputTokens: 16, cacheReadTokens: 0, outputTokens: 300, reasoningTokens: 0 });
  });
});

describe('deepseek fixtures', () => {
  it('29. reasoner: reasoning_content then text, usage on the finish chunk', async () => {
    const { result, finish } = await serve('deepseek/reasoner-reasoning-content-then-text.sse', 'deepseek', 'deepseek-reasoner');
    expect(result.content.map((b) => b.type)).toEqual(['reasoning', 'text']);
    const reasoning = reasoningOf(result);
    expect(reasoning.startsWith('Hmm, the user just said "Hello"')).toBe(true);
    expect(reasoning).toHaveLength(882);
    expect(textOf(result)).toBe('Hello there! 😊 How can I help you today?');
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual({ inputTokens: 6, cacheReadTokens: 0, outputTokens: 212, reasoningTokens: 198 });
    expect(finish.replayState?.blocks).toEqual([{ field: 'reasoning_content' }, null]);
  });

  it('30. reasoner: reasoning then a call_00_ tool call; cache hit/miss usage', async () => {
    const { result } = await serve('deepseek/reasoner-reasoning-then-tool-call.chunks.jsonl', 'deepseek', 'deepseek-reasoner');
    const reasoning = reasoningOf(result);
    expect(reasoning.startsWith('The user is asking for the weather in San Francisco. I need to use the weather t')).toBe(true);
    expect(reasoning).toHaveLength(191);
    expect(toolCallsOf(result)).toEqual([{ id: 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF', name: 'weather', arguments: '{"location": "San Francisco"}' }]);
    expect(textOf(result)).toBe('');
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual({ inputTokens: 19, cacheReadTokens: 320, outputTokens: 83, reasoningTokens: 39 });
  });
});

describe('openai-compatible fixtures', () => {
  it('32. groq: reasoning, then event: error tool_use_failed → error finish, reasoning kept', async () => {
    const { result, chunks } = await serve('openai-compatible/groq-gpt-oss-reasoning-then-event-error-tool-use-failed.sse');
    const reasoning = reasoningOf(result);
    expect(reasoning.startsWith('We need to call the tool with invalid parameters first')).toBe(true);
    expect(reasoning).toHaveLength(412);
    expect(toolCallsOf(result)).toEqual([]);
    const failure = failureOf(result);
    expect(result.finish.kind).toBe('error');
    expect(failure.code).toBe('MALFORMED_RESPONSE');
    expect(failure.providerCode).toBe('tool_use_failed');
    expect(failure.status).toBe(400);
    expect(failure.message).toContain('Tool call validation failed: ');
    expect(result.usage).toBeUndefined();
    expect(chunks.some((c) => c.type === 'usage')).toBe(false);
  });

  it('34. groq: the whole call in one delta, index after function, x_groq usage', async () => {
    const { result } = await serve('openai-compatible/groq-tool-call-single-delta-x-groq-usage.chunks.jsonl');
    expect(toolCallsOf(result)).toEqual([{ id: 'tk85n1k4m', name: 'weather', arguments: '{}' }]);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual({ inputTokens: 210, outputTokens: 15 });
  });

  it('35. xai: reasoning_content, one-delta call, completion_tokens excluding reasoning', async () => {
    const { result } = await serve('openai-compatible/xai-reasoning-content-tool-call.chunks.jsonl');
    expect(reasoningOf(result)).toBe('First, the user is');
    expect(toolCallsOf(result)).toEqual([{ id: 'call_55117580', name: 'weather', arguments: '{"location":"San Francisco"}' }]);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    // in = 291 − 290 cached; out = 26 + 196 reasoning (detected: 291 + 26 + 196 = 513 = total_tokens).
    expect(result.usage).toEqual({ inputTokens: 1, cacheReadTokens: 290, outputTokens: 222, reasoningTokens: 196 });
  });

  it('36. mistral: no index, no type, finish and usage in the same chunk', async () => {
    const { result } = await serve('openai-compatible/mistral-tool-call-no-index-finish-same-chunk.chunks.jsonl');
    expect(toolCallsOf(result)).toEqual([{ id: 'gSIMJiOkT', name: 'weather', arguments: '{"location": "San Francisco"}' }]);
    expect(result.content).toHaveLength(1);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual({ inputTokens: 124, outputTokens: 22 });
  });

  it('40. zai: role on every chunk, finish_reason before delta, usage on the finish chunk', async () => {
    const { result } = await serve('openai-compatible/zai-glm-reasoning-content-role-every-chunk.sse');
    const reasoning = reasoningOf(result);
    expect(reasoning.startsWith("\n1.  **Analyze the User's Request:**")).toBe(true);
    expect(reasoning).toHaveLength(2173);
    expect(textOf(result)).toBe('4');
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual({ inputTokens: 13, cacheReadTokens: 0, outputTokens: 564, reasoningTokens: 561 });
  });

  it('41. hf router: choices:[] usage chunk with null details', async () => {
    const { result } = await serve('openai-compatible/hf-router-novita-usage-chunk-empty-choices.sse');
    expect(rig.server.requests.at(-1)!.headers['x-harness-route']).toBe('compat'); // route headers are sent
    expect(result.content).toEqual([{ type: 'text', text: 'Paris' }]);
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual({ inputTokens: 40, outputTokens: 2 });
  });
});

describe('chat parse quirks beyond the recordings', () => {
  const frame = (choices: unknown[], extra: Record<string, unknown> = {}) => `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices, ...extra })}\n\n`;
  const delta = (d: unknown, finish: string | null = null) => ({ index: 0, delta: d, finish_reason: finish });

  it('indexes starting at 1, an empty name on a continuation, comment lines', async () => {
    rig.server.enqueue({
      body:
        ': keepalive\n\n' +
        frame([delta({ role: 'assistant', content: null })]) +
        frame([delta({ tool_calls: [{ index: 1, id: 'a1', type: 'function', function: { name: 'first', arguments: '{"x"' } }] })]) +
        frame([delta({ tool_calls: [{ index: 1, function: { name: '', arguments: ':1}' } }] })]) +
        ': keepalive\n\n' +
        frame([delta({ tool_calls: [{ index: 2, id: 'a2', function: { name: 'second', arguments: '' } }] })]) +
        frame([delta({ tool_calls: [{ index: 2, function: { name: 'second', arguments: '{}' } }] })]) +
        frame([delta({}, 'tool_calls')], { usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } }) +
        'data: [DONE]\n\n',
    });
    const { result, chunks } = await run(rig.harness, { provider: 'compat', model: 'm' });
    checkBlockProtocol(chunks);
    expect(toolCallsOf(result)).toEqual([
      { id: 'a1', name: 'first', arguments: '{"x":1}' },
      { id: 'a2', name: 'second', arguments: '{}' },
    ]);
    expect(result.usage).toEqual({ inputTokens: 5, outputTokens: 3 });
  });

  it('an index reused with a new id opens a new call; "stop" with tool calls is tool-calls', async () => {
    rig.server.enqueue({
      body:
        frame([delta({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'one', arguments: '{"a":1}' } }] })]) +
        frame([delta({ tool_calls: [{ index: 0, id: 'c2', function: { name: 'two', arguments: '{"b":2}' } }] })]) +
        frame([delta({}, 'stop')]) +
        'data: [DONE]\n\n',
    });
    const { result } = await run(rig.harness, { provider: 'compat', model: 'm' });
    expect(toolCallsOf(result)).toEqual([
      { id: 'c1', name: 'one', arguments: '{"a":1}' },
      { id: 'c2', name: 'two', arguments: '{"b":2}' },
    ]);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
  });

  it('max-tokens mid tool call: no block-end for the call, the assembler drops it', async () => {
    rig.server.enqueue({
      body:
        frame([delta({ content: 'Let me' })]) +
        frame([delta({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'one', arguments: '{"a":' } }] })]) +
        frame([delta({}, 'length')]) +
        'data: [DONE]\n\n',
    });
    const { result, chunks } = await run(rig.harness, { provider: 'compat', model: 'm' });
    expect(chunks.filter((c) => c.type === 'block-end').map((c) => c.index)).toEqual([0]);
    expect(result.content).toEqual([{ type: 'text', text: 'Let me' }]);
    expect(result.finish).toEqual({ kind: 'max-tokens' });
    expect(result.droppedToolCallCount).toBe(1);
  });

  it('a stop with no content at all is EMPTY_RESPONSE; content_filter is an error', async () => {
    const frames = splitSseFrames(readFixture('openai-chat/text-with-include-usage.sse'));
    rig.server.enqueue({ body: frames[0]! + frames.at(-3)! + frames.at(-2)! + frames.at(-1)! });
    const empty = await run(rig.harness, { provider: 'oai', model: 'gpt-4o' });
    expect(failureOf(empty.result).code).toBe('EMPTY_RESPONSE');
    expect(empty.result.usage).toEqual({ inputTokens: 14, outputTokens: 30, reasoningTokens: 0 });

    rig.server.enqueue({ body: `${frame([delta({ content: 'Some' })]) + frame([delta({}, 'content_filter')])}data: [DONE]\n\n` });
    const filtered = await run(rig.harness, { provider: 'compat', model: 'm' });
    expect(failureOf(filtered.result)).toMatchObject({ code: 'CONTENT_FILTER', providerCode: 'content_filter' });
    expect(filtered.result.content).toEqual([{ type: 'text', text: 'Some' }]);
  });

  it('n > 1: chunks interleaved by choices[].index — only choice 0 is the message, its finish_reason counts', async () => {
    const choice = (index: number, d: unknown, finish: string | null = null) => ({ index, delta: d, finish_reason: finish });
    rig.server.enqueue({
      body:
        frame([choice(0, { role: 'assistant', content: '' }), choice(1, { role: 'assistant', content: '' })]) +
        frame([choice(1, { content: 'Second ' })]) +
        frame([choice(0, { content: 'First ' })]) +
        frame([choice(1, { tool_calls: [{ index: 0, id: 'c9', function: { name: 'other', arguments: '{}' } }] })]) +
        frame([choice(0, { content: 'answer.' })]) +
        frame([choice(1, { content: 'answer.' })]) +
        frame([choice(1, {}, 'tool_calls')]) +
        frame([choice(0, {}, 'stop')]) +
        frame([], { usage: { prompt_tokens: 9, completion_tokens: 8, total_tokens: 17 } }) +
        'data: [DONE]\n\n',
    });
    const { result, chunks } = await run(rig.harness, { provider: 'compat', model: 'm' });
    checkBlockProtocol(chunks);
    expect(result.content).toEqual([{ type: 'text', text: 'First answer.' }]);
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual({ inputTokens: 9, outputTokens: 8 });
  });

  it('[DONE] after content without any finish_reason: finished, stop, with its usage', async () => {
    rig.server.enqueue({
      body:
        frame([{ index: 0, delta: { role: 'assistant', content: 'Hello' } }]) +
        frame([{ index: 0, delta: { content: ' there' } }]) +
        frame([], { usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } }) +
        'data: [DONE]\n\n',
    });
    const done = await run(rig.harness, { provider: 'compat', model: 'm' });
    checkBlockProtocol(done.chunks);
    expect(done.result.content).toEqual([{ type: 'text', text: 'Hello there' }]);
    expect(done.result.finish).toEqual({ kind: 'stop' });
    expect(done.result.usage).toEqual({ inputTokens: 4, outputTokens: 2 });
    // The same body without [DONE] did not finish: TRANSPORT (below).
  });

  it('a mid-stream error chunk keeps the usage it carries; a numeric error.code is the status', async () => {
    rig.server.enqueue({
      body:
        frame([delta({ role: 'assistant', content: 'Partial' })]) +
        frame([delta({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'one', arguments: '{"a":' } }] })]) +
        `data: ${JSON.stringify({ error: { message: 'Upstream provider failed', code: 502 }, usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 } })}\n\n`,
    });
    const { result, chunks } = await run(rig.harness, { provider: 'compat', model: 'm' });
    checkBlockProtocol(chunks);
    expect(finishOf(chunks).finish.kind).toBe('error');
    expect(failureOf(result)).toMatchObject({ code: 'SERVER', status: 502 });
    expect(failureOf(result).message).toContain('Upstream provider failed');
    expect(result.usage).toEqual({ inputTokens: 12, outputTokens: 3 });
    expect(result.content).toEqual([{ type: 'text', text: 'Partial' }]);
    expect(toolCallsOf(result)).toEqual([]);

    rig.server.enqueue({ body: `${frame([delta({ content: 'x' })])}data: ${JSON.stringify({ error: { message: 'Rate limit exceeded: free-models-per-min', code: 429 } })}\n\n` });
    const limited = await run(rig.harness, { provider: 'compat', model: 'm' });
    expect(failureOf(limited.result)).toMatchObject({ code: 'RATE_LIMIT', status: 429 });
    expect(limited.result.usage).toBeUndefined();
    expect(limited.chunks.some((c) => c.type === 'usage')).toBe(false);
  });

  it('a body that ends cleanly without a finish_reason is TRANSPORT', async () => {
    const frames = splitSseFrames(readFixture('openai-chat/single-tool-call-get-weather.sse'));
    rig.server.enqueue({ body: frames.slice(0, 4).join('') });
    const { result } = await run(rig.harness, { provider: 'oai', model: 'gpt-4o' });
    expect(failureOf(result).code).toBe('TRANSPORT');
    expect(toolCallsOf(result)).toEqual([]);
  });
});

describe('chat faults', () => {
  it('429 with retry-after: 7 → RATE_LIMIT, providerRetryAfterMs 7000', async () => {
    rig.server.enqueue({ status: 429, headers: { 'retry-after': '7' }, json: providerErrorBody('openai', 429) });
    const { result, chunks } = await run(rig.harness, { provider: 'oai', model: 'gpt-4o' });
    expect(chunks).toHaveLength(1);
    expect(result.finish.kind).toBe('error');
    expect(failureOf(result)).toMatchObject({ code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 7000, providerCode: 'rate_limit_exceeded' });
  });

  it('retry-after-ms and an HTTP-date retry-after', async () => {
    rig.server.enqueue({ status: 429, headers: { 'retry-after-ms': '1500', 'retry-after': '9' }, json: providerErrorBody('openai', 429) });
    expect(failureOf((await run(rig.harness, { provider: 'oai', model: 'gpt-4o' })).result).providerRetryAfterMs).toBe(1500);
    const date = new Date(Date.now() + 20_000).toUTCString();
    rig.server.enqueue({ status: 429, headers: { 'retry-after': date }, json: providerErrorBody('openai', 429) });
    const ms = failureOf((await run(rig.harness, { provider: 'oai', model: 'gpt-4o' })).result).providerRetryAfterMs as number;
    expect(ms).toBeGreaterThan(17_000);
    expect(ms).toBeLessThanOrEqual(20_000);
  });

  it('401 → AUTH; 403 → AUTH; 500/503 → SERVER; 400 → INVALID_REQUEST', async () => {
    const cases: [number, string][] = [
      [401, 'AUTH'],
      [403, 'AUTH'],
      [500, 'SERVER'],
      [503, 'SERVER'],
      [400, 'INVALID_REQUEST'],
      [404, 'INVALID_REQUEST'],
    ];
    for (const [status, code] of cases) {
      rig.server.enqueue({ status, json: providerErrorBody('openai', status) });
      const { result } = await run(rig.harness, { provider: 'oai', model: 'gpt-4o' });
      expect(failureOf(result)).toMatchObject({ code, status });
    }
  });

  it('quota (429 insufficient_quota) → QUOTA_EXCEEDED; context_length_exceeded → CONTEXT_WINDOW_EXCEEDED', async () => {
    rig.server.enqueue({ status: 429, json: { error: { message: 'You exceeded your current quota.', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } } });
    expect(failureOf((await run(rig.harness, { provider: 'oai', model: 'gpt-4o' })).result)).toMatchObject({ code: 'QUOTA_EXCEEDED', status: 429 });
    rig.server.enqueue({
      status: 400,
      json: { error: { message: "This model's maximum context length is 128000 tokens.", type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } },
    });
    expect(failureOf((await run(rig.harness, { provider: 'oai', model: 'gpt-4o' })).result)).toMatchObject({ code: 'CONTEXT_WINDOW_EXCEEDED', status: 400 });
  });

  it('socket cut after half the bytes → TRANSPORT, partial text kept, no tool call', async () => {
    const half = Math.floor(Buffer.byteLength(readFixture('openai-chat/parallel-tool-calls-weather-and-stock.sse')) / 2);
    rig.server.enqueue({ fixture: 'openai-chat/parallel-tool-calls-weather-and-stock.sse', closeAfterBytes: half });
    const { result, chunks } = await run(rig.harness, { provider: 'oai', model: 'gpt-4o' });
    expect(chunks.some((c) => c.type === 'tool-call-delta')).toBe(true);
    expect(failureOf(result).code).toBe('TRANSPORT');
    expect(toolCallsOf(result)).toEqual([]);
  });

  it('abort mid-stream → aborted finish, promptly', async () => {
    rig.server.enqueue({ fixture: 'openai-chat/text-with-include-usage.sse', frameDelayMs: 30 });
    const controller = new AbortController();
    const prepared = await rig.harness.llm.prepareCall({ provider: 'oai', model: 'gpt-4o' });
    const chunks = [];
    const t0 = Date.now();
    for await (const chunk of prepared.stream({ ...prepared.config, messages: [createUserMessage('hi')], signal: controller.signal })) {
      chunks.push(chunk);
      if (chunks.filter((c) => c.type === 'text-delta').length === 3) controller.abort();
    }
    expect(Date.now() - t0).toBeLessThan(3000);
    const finish = finishOf(chunks);
    expect(finish.finish.kind).toBe('aborted');
    expect((finish.finish as { failure: { code: string } }).failure.code).toBe('ABORTED');
  });

  it('abort while the provider stalls after the headers → aborted, no hang', async () => {
    rig.server.enqueue({ fixture: 'openai-chat/text-with-include-usage.sse', closeAfterBytes: 900, hang: true });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    const t0 = Date.now();
    const { chunks } = await run(rig.harness, { provider: 'oai', model: 'gpt-4o' }, { signal: controller.signal });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(finishOf(chunks).finish.kind).toBe('aborted');
  });

  it('idle timeout: headers then silence → TIMEOUT; silence before headers → TIMEOUT', async () => {
    rig.server.enqueue({ hang: true });
    const t0 = Date.now();
    const stalled = await run(rig.harness, { provider: 'slow', model: 'm' });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(failureOf(stalled.result)).toMatchObject({ code: 'TIMEOUT', idleTimeoutMs: 300 });
    expect(stalled.result.finish.kind).toBe('error');

    rig.server.enqueue({ fixture: 'openai-chat/text-with-include-usage.sse', closeAfterBytes: 900, hang: true });
    const midway = await run(rig.harness, { provider: 'slow', model: 'm' });
    expect(failureOf(midway.result).code).toBe('TIMEOUT');
    expect(textOf(midway.result).length).toBeGreaterThan(0);

    rig.server.enqueue({ hang: 'before-headers' });
    expect(failureOf((await run(rig.harness, { provider: 'slow', model: 'm' })).result).code).toBe('TIMEOUT');
  });

  it('a slow but steady stream does not time out', async () => {
    rig.server.enqueue({ fixture: 'openai-compatible/hf-router-novita-usage-chunk-empty-choices.sse', frameDelayMs: 120 });
    const { result } = await run(rig.harness, { provider: 'slow', model: 'm' });
    expect(result.finish).toEqual({ kind: 'stop' });
  });

  it('a slow consumer does not time the call out (the idle clock runs only while waiting for the provider)', async () => {
    rig.server.enqueue('openai-compatible/hf-router-novita-usage-chunk-empty-choices.sse');
    const prepared = await rig.harness.llm.prepareCall({ provider: 'slow', model: 'm' });
    const chunks = [];
    for await (const chunk of prepared.stream({ ...prepared.config, messages: [createUserMessage('hi')] })) {
      chunks.push(chunk);
      if (chunks.length === 1) await new Promise((resolve) => setTimeout(resolve, 700));
    }
    expect(finishOf(chunks).finish).toEqual({ kind: 'stop' });
  });

  it('a consumer that stops early releases the request (no hang), and the route keeps serving', async () => {
    rig.server.enqueue({ fixture: 'openai-chat/text-with-include-usage.sse', closeAfterBytes: 900, hang: true });
    const prepared = await rig.harness.llm.prepareCall({ provider: 'oai', model: 'gpt-4o' });
    const t0 = Date.now();
    let seen = 0;
    for await (const chunk of prepared.stream({ ...prepared.config, messages: [createUserMessage('hi')] })) {
      if (chunk.type === 'text-delta' && ++seen === 2) break;
    }
    expect(Date.now() - t0).toBeLessThan(2000);
    const { result } = await serve('openai-compatible/hf-router-novita-usage-chunk-empty-choices.sse');
    expect(result.finish).toEqual({ kind: 'stop' });
  });

  it('abort before the headers arrive → aborted', async () => {
    rig.server.enqueue({ hang: 'before-headers' });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const { chunks } = await run(rig.harness, { provider: 'oai', model: 'gpt-4o' }, { signal: controller.signal });
    expect(chunks).toHaveLength(1);
    expect(finishOf(chunks).finish).toMatchObject({ kind: 'aborted', failure: { code: 'ABORTED' } });
  });

  it('missing API key: the plugin loads; prepareCall (preflight) and an unprepared call fail with AUTH naming the variable', async () => {
    const variable = 'HARNESS_TEST_MISSING_OPENAI_KEY';
    delete process.env[variable];
    const harness = await createHarness({ config: { plugins: [{ module: OPENAI_PLUGIN, config: { providers: { openai: { apiKeyEnv: variable }, deepseek: { apiKeyEnv: variable } } } }] } });
    try {
      const refused = await harness.llm.prepareCall({ provider: 'deepseek', model: 'deepseek-chat' }).then(
        () => undefined,
        (error: unknown) => error as { code: string; message: string },
      );
      expect(refused?.code).toBe('AUTH');
      expect(refused?.message).toContain(variable);
      expect(refused?.message.split('\n')).toHaveLength(1);
      const chunks = [];
      for await (const chunk of harness.llm.stream({ provider: 'deepseek', model: 'deepseek-chat', messages: [createUserMessage('hi')] })) chunks.push(chunk);
      expect(chunks).toHaveLength(1);
      expect(chunks[0]).toMatchObject({ type: 'finish', finish: { kind: 'error', failure: { code: 'AUTH', apiKeyEnv: variable } } });
    } finally {
      await harness.dispose();
    }
  });
});

describe('DeepSeek reasoning round trip', () => {
  const weatherTool = { name: 'weather', description: 'Weather at a location.', inputSchema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] } };

  async function firstTurn(): Promise<{ assistant: Message; reasoning: string }> {
    rig.server.enqueue('deepseek/reasoner-reasoning-then-tool-call.chunks.jsonl');
    const { result } = await run(rig.harness, { provider: 'deepseek', model: 'deepseek-reasoner' }, { tools: [weatherTool] });
    const assistant = createAssistantMessage({ content: result.content, provider: 'deepseek', model: 'deepseek-reasoner', replayState: result.replayState });
    return { assistant, reasoning: reasoningOf(result) };
  }

  it('sends reasoning_content back byte-exact with content "" and the tool call', async () => {
    const { assistant, reasoning } = await firstTurn();
    const history = [createUserMessage('Weather in SF?'), assistant, createToolResultMessage({ callId: 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF', content: '{"temp": 18}' })];
    rig.server.enqueue('deepseek/reasoner-reasoning-content-then-text.sse');
    const adapter = adapterOf<OpenAIChatAdapter>(rig.harness, 'deepseek');
    const before = adapter.degradeCount;
    await run(rig.harness, { provider: 'deepseek', model: 'deepseek-reasoner' }, { messages: history, tools: [weatherTool] });
    const body = rig.server.requests.at(-1)!.body;
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: '',
      reasoning_content: reasoning,
      tool_calls: [{ id: 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF', type: 'function', function: { name: 'weather', arguments: '{"location": "San Francisco"}' } }],
    });
    expect(body.messages[1].reasoning_content).toBe(reasoning);
    expect(rig.server.requests.at(-1)!.rawBody).toContain(JSON.stringify(reasoning));
    expect(body.messages[2]).toEqual({ role: 'tool', tool_call_id: 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF', content: '{"temp": 18}' });
    expect(adapter.degradeCount).toBe(before);
  });

  it('sends none of it when the assistant message came from another provider or adapter kind', async () => {
    const { assistant } = await firstTurn();
    const adapter = adapterOf<OpenAIChatAdapter>(rig.harness, 'deepseek');
    const source = assistant.source as { replayState: unknown };
    const foreignKind = createAssistantMessage({
      content: assistant.content,
      provider: 'deepseek',
      model: 'deepseek-reasoner',
      replayState: { response: { kind: 'anthropic', version: 1 }, blocks: [{ signature: 'sig' }, null] },
    });
    const otherProvider = createAssistantMessage({ content: assistant.content, provider: 'compat', model: 'm', replayState: source.replayState as never });
    for (const message of [foreignKind, otherProvider]) {
      const before = adapter.degradeCount;
      const history = [createUserMessage('Weather in SF?'), message, createToolResultMessage({ callId: 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF', content: 'sunny' })];
      for (let i = 0; i < 2; i++) {
        rig.server.enqueue('deepseek/reasoner-reasoning-content-then-text.sse');
        await run(rig.harness, { provider: 'deepseek', model: 'deepseek-reasoner' }, { messages: history });
        const sent = rig.server.requests.at(-1)!.body.messages[1];
        expect(sent.reasoning_content).toBeUndefined();
        expect(sent.reasoning).toBeUndefined();
        expect(sent.content).toBe('');
        expect(sent.tool_calls[0].id).toBe('call_00_ioIn7yN9p1ZOMNpDLwd4MgAF');
      }
      expect(adapter.degradeCount).toBe(before + 1); // told once per message, not per request
      expect(adapter.lastDegrade?.messageId).toBe(message.id);
      expect(adapter.lastDegrade?.failure.code).toBe('INVALID_REPLAY_STATE');
    }
    expect(adapter.lastDegrade?.reason).toBe('other-provider');
  });
});

describe('chat request serialisation', () => {
  const tools = [
    {
      name: 'get_weather',
      description: 'Current weather.',
      inputSchema: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome'] }, days: { type: 'integer', minimum: 1 } }, required: ['city'], additionalProperties: false },
    },
  ];
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

  function history(): Message[] {
    const assistant = createAssistantMessage({
      provider: 'oai',
      model: 'gpt-4o',
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool-call', id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      ],
    });
    return [
      createUserMessage([
        { type: 'text', text: 'What is in this picture, and the weather?' },
        { type: 'image', mediaType: 'image/png', data: png },
        { type: 'image', mediaType: 'image/jpeg', url: 'https://example.com/cat.jpg' },
      ]),
      assistant,
      createToolResultMessage({
        callId: 'call_1',
        content: [
          { type: 'text', text: 'sunny' },
          { type: 'image', mediaType: 'image/png', data: png },
        ],
      }),
    ];
  }

  it('openai route: system, images, tools, tool results, effort, max_completion_tokens, temperature, stop', async () => {
    rig.server.enqueue('openai-chat/text-with-include-usage.sse');
    await run(rig.harness, { provider: 'oai', model: 'gpt-4o', reasoningEffort: 'high', maxTokens: 321, temperature: 0.25, stop: ['END'] }, { system: 'Be brief.', tools, messages: history() });
    const request = rig.server.requests.at(-1)!;
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe('Bearer test-key');
    const body = request.body;
    expect(body).toMatchObject({ model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, reasoning_effort: 'high', max_completion_tokens: 321, temperature: 0.25, stop: ['END'] });
    expect(body.max_tokens).toBeUndefined();
    expect(body.tools).toEqual([{ type: 'function', function: { name: 'get_weather', description: 'Current weather.', parameters: tools[0]!.inputSchema } }]);
    expect(body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture, and the weather?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
        ],
      },
      { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Images returned by tool call call_1:' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
        ],
      },
    ]);
  });

  it('deepseek route: max_tokens, text-only model gets image placeholders', async () => {
    rig.server.enqueue('deepseek/reasoner-reasoning-content-then-text.sse');
    await run(rig.harness, { provider: 'deepseek', model: 'deepseek-chat', maxTokens: 100 }, { messages: history() });
    const body = rig.server.requests.at(-1)!.body;
    expect(body.max_tokens).toBe(100);
    expect(body.max_completion_tokens).toBeUndefined();
    expect(body.reasoning_effort).toBeUndefined();
    expect(body.messages[0].content[1]).toEqual({ type: 'text', text: '[image omitted: the model does not accept images (image/png)]' });
    expect(body.messages[2]).toEqual({ role: 'tool', tool_call_id: 'call_1', content: 'sunny\n[image omitted: the model does not accept images (image/png)]' });
    expect(body.messages).toHaveLength(3);
  });

  it('an unknown reasoning effort is refused by prepareCall', async () => {
    await expect(rig.harness.llm.prepareCall({ provider: 'oai', model: 'gpt-4o', reasoningEffort: 'max' })).rejects.toMatchObject({ code: 'UNSUPPORTED_REASONING_EFFORT' });
  });
});
