/**
 * llm-openai, Responses routes: every recorded stream of openai-responses/ through the fixture server
 * and the REAL `openai` SDK (the 4-step file step by step), asserted against SOURCES.md; faults;
 * encrypted reasoning round trip; request bodies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAssistantMessage, createToolResultMessage, createUserMessage, type AssembledMessage, type Message } from '../../runtime/index.ts';
import type { OpenAIResponsesAdapter } from '../../plugins/llm-openai/responses.ts';
import { providerErrorBody, readFixture } from '../support/fixture-server.ts';
import { adapterOf, checkBlockProtocol, finishOf, OPENAI_PLUGIN, reasoningOf, run, startRig, TEST_KEY_ENV, textOf, toolCallsOf, type Rig } from './helpers.ts';

const MULTISTEP = 'openai-responses/reasoning-encrypted-content-summary-multistep.chunks.jsonl';

let rig: Rig;

beforeAll(async () => {
  rig = await startRig(OPENAI_PLUGIN, (server) => ({
    providers: {
      openai: { baseURL: server.openaiBaseURL, apiKeyEnv: TEST_KEY_ENV, allowUnknownModels: true },
      gateway: { api: 'responses', baseURL: server.openaiBaseURL, apiKeyEnv: TEST_KEY_ENV, allowUnknownModels: true, idleTimeoutMs: 300 },
      chatty: { api: 'chat', baseURL: server.openaiBaseURL, apiKeyEnv: TEST_KEY_ENV, allowUnknownModels: true },
    },
  }));
});
afterAll(async () => {
  await rig?.close();
});

async function serve(fixture: string | { fixture: string; part: number }, provider = 'openai', model = 'gpt-5') {
  rig.server.enqueue(fixture);
  const { chunks, result } = await run(rig.harness, { provider, model });
  checkBlockProtocol(chunks);
  const finish = finishOf(chunks);
  if (finish.finish.kind !== 'error' && finish.finish.kind !== 'aborted') {
    expect(finish.replayState?.blocks).toHaveLength(chunks.filter((c) => c.type === 'block-start').length);
    expect(finish.replayState?.response).toMatchObject({ kind: 'openai-responses', version: 1 });
  }
  return { chunks, result, finish };
}

function failureOf(result: AssembledMessage) {
  expect(result.finish.kind === 'error' || result.finish.kind === 'aborted').toBe(true);
  return (result.finish as { failure: Record<string, unknown> & { code: string; message: string } }).failure;
}

function encryptedOf(fixture: string, outputIndex: number, event: 'response.output_item.added' | 'response.output_item.done', part?: number): string {
  const lines =
    part === undefined
      ? readFixture(fixture)
          .split('\n')
          .filter((line) => line.startsWith('data: {'))
          .map((line) => line.slice(6))
      : readFixture(fixture)
          .split('\n')
          .filter((line) => line.trim() !== '');
  const events = lines.map((line) => JSON.parse(line) as { type: string; output_index?: number; item?: { encrypted_content?: string } });
  let step = -1;
  for (const e of events) {
    if (e.type === 'response.created') step++;
    if ((part === undefined || step === part) && e.type === event && e.output_index === outputIndex) return e.item!.encrypted_content!;
  }
  throw new Error('not found');
}

describe('openai-responses fixtures (SOURCES.md expected outcomes)', () => {
  it('10. text-output-text-delta: old shape without sequence_number', async () => {
    const { result } = await serve('openai-responses/text-output-text-delta.sse', 'openai', 'gpt-4o');
    expect(result.content).toEqual([{ type: 'text', text: 'The capital of France is Paris.' }]);
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual({ inputTokens: 278, cacheReadTokens: 0, outputTokens: 9, reasoningTokens: 0 });
    expect(result.replayState?.blocks).toEqual([{ type: 'message', id: 'msg_67e554a28bec8191b56d3e2331eff88006c52f0e511c76ed' }]);
  });

  it('11. function-call-arguments-delta: tool-calls derived from the function_call item', async () => {
    const { result } = await serve('openai-responses/function-call-arguments-delta.sse', 'openai', 'gpt-4o');
    expect(toolCallsOf(result)).toEqual([{ id: 'call_kL0PCQV7M2WMoVX8V8OtYSAL', name: 'get_capital', arguments: '{"country":"France"}' }]);
    expect(result.content).toHaveLength(1);
    expect(result.replayState?.blocks).toEqual([{ type: 'function_call', id: 'fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2' }]);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual({ inputTokens: 255, cacheReadTokens: 0, outputTokens: 16, reasoningTokens: 0 });
  });

  it('12. gpt5: opaque reasoning item (encrypted_content of .done), then final_result', async () => {
    const fixture = 'openai-responses/gpt5-reasoning-item-then-function-call.sse';
    const { result } = await serve(fixture);
    expect(result.content[0]).toEqual({ type: 'reasoning', text: '' });
    const encrypted = encryptedOf(fixture, 0, 'response.output_item.done');
    expect(encrypted).toHaveLength(3896);
    expect(encrypted).not.toBe(encryptedOf(fixture, 0, 'response.output_item.added'));
    expect(result.replayState?.blocks?.[0]).toEqual({ type: 'reasoning', id: 'rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405', encryptedContent: encrypted, source: 'summary' });
    expect(toolCallsOf(result)).toEqual([{ id: 'call_CWXgs68YprAjp6t0371hiPOI', name: 'final_result', arguments: '{"result":6666}' }]);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual({ inputTokens: 53, cacheReadTokens: 0, outputTokens: 469, reasoningTokens: 448 });
  });

  it('13. multistep (4 responses), each step separately', async () => {
    const step1 = await serve({ fixture: MULTISTEP, part: 0 }, 'openai', 'gpt-5.1-codex-max');
    const summary = reasoningOf(step1.result);
    expect(summary.startsWith('**Calculating step-by-step using calculator**')).toBe(true);
    expect(summary).toBe("**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product.");
    const encrypted = encryptedOf(MULTISTEP, 0, 'response.output_item.done', 0);
    expect(encrypted).toHaveLength(1060);
    expect(encrypted).not.toBe(encryptedOf(MULTISTEP, 0, 'response.output_item.added', 0));
    expect(step1.result.replayState?.blocks?.[0]).toEqual({ type: 'reasoning', id: 'rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9', encryptedContent: encrypted, source: 'summary' });
    expect(toolCallsOf(step1.result)).toEqual([{ id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', name: 'calculator', arguments: '{"a":12,"b":7,"op":"add"}' }]);
    expect(step1.result.finish).toEqual({ kind: 'tool-calls' });
    expect(step1.result.usage).toEqual({ inputTokens: 134, cacheReadTokens: 0, outputTokens: 28, reasoningTokens: 0 });

    const step2 = await serve({ fixture: MULTISTEP, part: 1 }, 'openai', 'gpt-5.1-codex-max');
    expect(toolCallsOf(step2.result)).toEqual([{ id: 'call_Q6pW65MUgW9vF59BmItYGos3', name: 'calculator', arguments: '{"a":19,"b":3,"op":"multiply"}' }]);
    expect(step2.result.finish).toEqual({ kind: 'tool-calls' });
    expect(step2.result.usage).toEqual({ inputTokens: 221, cacheReadTokens: 0, outputTokens: 26, reasoningTokens: 0 });

    const step3 = await serve({ fixture: MULTISTEP, part: 2 }, 'openai', 'gpt-5.1-codex-max');
    expect(toolCallsOf(step3.result)).toEqual([{ id: 'call_Zl5vIMnD7dVAjgU6FkhmiCZh', name: 'calculator', arguments: '{"a":57,"b":10,"op":"multiply"}' }]);
    expect(step3.result.finish).toEqual({ kind: 'tool-calls' });
    expect(step3.result.usage).toEqual({ inputTokens: 260, cacheReadTokens: 0, outputTokens: 26, reasoningTokens: 0 });

    const step4 = await serve({ fixture: MULTISTEP, part: 3 }, 'openai', 'gpt-5.1-codex-max');
    expect(step4.result.content).toEqual([{ type: 'text', text: 'The final result is **570**.' }]);
    expect(step4.result.finish).toEqual({ kind: 'stop' });
    expect(step4.result.usage).toEqual({ inputTokens: 299, cacheReadTokens: 0, outputTokens: 12, reasoningTokens: 0 });
  });

  it('14. error event insufficient_quota → error finish QUOTA_EXCEEDED, no content, no usage', async () => {
    const { result, chunks } = await serve('openai-responses/error-insufficient-quota-then-failed.chunks.jsonl');
    expect(result.content).toEqual([]);
    const failure = failureOf(result);
    expect(result.finish.kind).toBe('error');
    expect(failure.code).toBe('QUOTA_EXCEEDED');
    expect(failure.providerCode).toBe('insufficient_quota');
    expect(failure.message).toContain('You exceeded your current quota');
    expect(result.usage).toBeUndefined();
    expect(chunks).toHaveLength(1);
  });

  it('16. openrouter: comment lines, reasoning_text deltas, reasoning item done after the message', async () => {
    const { result, chunks } = await serve('openai-responses/openrouter-reasoning-text-delta.sse', 'openai', 'openai/gpt-oss-20b');
    expect(result.content.map((b) => b.type)).toEqual(['reasoning', 'text']);
    expect(reasoningOf(result)).toBe('The user asks: "What is 2+2?" They expect a straightforward answer: 4. Just answer 4.');
    expect(textOf(result)).toBe('4');
    // block 0 (reasoning) ends after block 1 (text), as its item's .done arrives last
    expect(chunks.filter((c) => c.type === 'block-end').map((c) => c.index)).toEqual([1, 0]);
    expect(result.replayState?.blocks).toEqual([
      { type: 'reasoning', id: 'rs_tmp_2kbe7x16sax', source: 'content' },
      { type: 'message', id: 'msg_tmp_8cjof4f6zpw' },
    ]);
    expect(result.finish).toEqual({ kind: 'stop' });
    expect(result.usage).toEqual({ inputTokens: 78, cacheReadTokens: 0, outputTokens: 37, reasoningTokens: 22 });
  });

  it('18. bedrock mantle: opaque reasoning, short call id call_1, cache_write_tokens', async () => {
    const fixture = 'openai-responses/bedrock-mantle-reasoning-then-function-call-short-call-ids.sse';
    const { result } = await serve(fixture);
    expect(result.content[0]).toEqual({ type: 'reasoning', text: '' });
    const encrypted = encryptedOf(fixture, 0, 'response.output_item.done');
    expect(encrypted).toHaveLength(796);
    expect(result.replayState?.blocks?.[0]).toEqual({ type: 'reasoning', id: 'rs_4a4c74f82a535c8f8bda7d43b75d75f7', encryptedContent: encrypted, source: 'summary' });
    expect(toolCallsOf(result)).toEqual([{ id: 'call_1', name: 'second_tool', arguments: '{}' }]);
    expect(result.finish).toEqual({ kind: 'tool-calls' });
    expect(result.usage).toEqual({ inputTokens: 115, cacheReadTokens: 0, cacheWriteTokens: 0, outputTokens: 30, reasoningTokens: 14 });
  });
});

describe('responses terminal events beyond the recordings', () => {
  const frame = (data: Record<string, unknown>) => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;
  const response = (status: string, extra: Record<string, unknown> = {}) => ({ id: 'resp_x', object: 'response', status, output: [], ...extra });

  it('response.incomplete (max_output_tokens) → max-tokens, the unfinished call has no block-end', async () => {
    rig.server.enqueue({
      body:
        frame({ type: 'response.created', response: response('in_progress') }) +
        frame({ type: 'response.output_item.added', output_index: 0, item: { type: 'message', id: 'msg_1', role: 'assistant', content: [] } }) +
        frame({ type: 'response.content_part.added', output_index: 0, content_index: 0, part: { type: 'output_text', text: '' } }) +
        frame({ type: 'response.output_text.delta', output_index: 0, content_index: 0, delta: 'Partial' }) +
        frame({
          type: 'response.output_item.done',
          output_index: 0,
          item: { type: 'message', id: 'msg_1', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text: 'Partial' }] },
        }) +
        frame({ type: 'response.output_item.added', output_index: 1, item: { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'f', arguments: '' } }) +
        frame({ type: 'response.function_call_arguments.delta', output_index: 1, delta: '{"a":' }) +
        frame({ type: 'response.incomplete', response: response('incomplete', { incomplete_details: { reason: 'max_output_tokens' }, usage: { input_tokens: 10, output_tokens: 5 } }) }),
    });
    const { result, chunks } = await run(rig.harness, { provider: 'openai', model: 'gpt-5' });
    checkBlockProtocol(chunks);
    expect(chunks.filter((c) => c.type === 'block-end').map((c) => c.index)).toEqual([0]);
    expect(result.content).toEqual([{ type: 'text', text: 'Partial' }]);
    expect(result.finish).toEqual({ kind: 'max-tokens' });
    expect(result.droppedToolCallCount).toBe(1);
    expect(result.replayState?.blocks).toEqual([{ type: 'message', id: 'msg_1' }]);
    expect(result.usage).toEqual({ inputTokens: 10, outputTokens: 5 });
  });

  it('response.failed → error with the provider code; completed with nothing → EMPTY_RESPONSE; no terminal → TRANSPORT', async () => {
    rig.server.enqueue({
      body:
        frame({ type: 'response.created', response: response('in_progress') }) + frame({ type: 'response.failed', response: response('failed', { error: { code: 'server_error', message: 'boom' } }) }),
    });
    expect(failureOf((await run(rig.harness, { provider: 'openai', model: 'gpt-5' })).result)).toMatchObject({ code: 'SERVER', providerCode: 'server_error' });
    rig.server.enqueue({ body: frame({ type: 'response.created', response: response('in_progress') }) + frame({ type: 'response.completed', response: response('completed') }) });
    expect(failureOf((await run(rig.harness, { provider: 'openai', model: 'gpt-5' })).result).code).toBe('EMPTY_RESPONSE');
    rig.server.enqueue({ body: frame({ type: 'response.created', response: response('in_progress') }) });
    expect(failureOf((await run(rig.harness, { provider: 'openai', model: 'gpt-5' })).result).code).toBe('TRANSPORT');
  });
});

describe('responses faults', () => {
  it('429 retry-after 7 → RATE_LIMIT 7000 ms; 401 → AUTH', async () => {
    rig.server.enqueue({ status: 429, headers: { 'retry-after': '7' }, json: providerErrorBody('openai', 429) }, { status: 401, json: providerErrorBody('openai', 401) });
    expect(failureOf((await run(rig.harness, { provider: 'openai', model: 'gpt-5' })).result)).toMatchObject({ code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 7000 });
    expect(failureOf((await run(rig.harness, { provider: 'openai', model: 'gpt-5' })).result)).toMatchObject({ code: 'AUTH', status: 401, providerCode: 'invalid_api_key' });
  });

  it('socket cut after half the bytes → TRANSPORT, no tool call kept', async () => {
    const fixture = 'openai-responses/gpt5-reasoning-item-then-function-call.sse';
    rig.server.enqueue({ fixture, closeAfterBytes: Math.floor(Buffer.byteLength(readFixture(fixture)) / 2) });
    const { result } = await run(rig.harness, { provider: 'openai', model: 'gpt-5' });
    expect(failureOf(result).code).toBe('TRANSPORT');
    expect(toolCallsOf(result)).toEqual([]);
  });

  it('abort mid-stream → aborted; idle stall → TIMEOUT', async () => {
    rig.server.enqueue({ fixture: MULTISTEP, part: 0, frameDelayMs: 20 });
    const controller = new AbortController();
    const prepared = await rig.harness.llm.prepareCall({ provider: 'openai', model: 'gpt-5' });
    const chunks = [];
    for await (const chunk of prepared.stream({ ...prepared.config, messages: [createUserMessage('x')], signal: controller.signal })) {
      chunks.push(chunk);
      if (chunk.type === 'reasoning-delta') controller.abort();
    }
    expect(finishOf(chunks).finish.kind).toBe('aborted');

    rig.server.enqueue({ fixture: MULTISTEP, part: 0, closeAfterBytes: 3000, hang: true });
    const t0 = Date.now();
    const stalled = await run(rig.harness, { provider: 'gateway', model: 'x' });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(failureOf(stalled.result).code).toBe('TIMEOUT');
  });

  it('stop sequences are UNSUPPORTED on the Responses API', async () => {
    const { result } = await run(rig.harness, { provider: 'openai', model: 'gpt-5', stop: ['END'] });
    expect(failureOf(result).code).toBe('UNSUPPORTED');
  });
});

describe('encrypted reasoning round trip', () => {
  const calculator = {
    name: 'calculator',
    description: 'A minimal calculator.',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' }, op: { type: 'string' } }, required: ['a', 'b', 'op'] },
  };

  async function stepOne(): Promise<{ assistant: Message; encrypted: string; summary: string }> {
    rig.server.enqueue({ fixture: MULTISTEP, part: 0 });
    const { result } = await run(rig.harness, { provider: 'openai', model: 'gpt-5' }, { tools: [calculator] });
    const assistant = createAssistantMessage({ content: result.content, provider: 'openai', model: 'gpt-5', replayState: result.replayState });
    return { assistant, encrypted: encryptedOf(MULTISTEP, 0, 'response.output_item.done', 0), summary: reasoningOf(result) };
  }

  it('the next request carries the reasoning item (id + encrypted_content of .done) and the item ids, byte-exact', async () => {
    const { assistant, encrypted, summary } = await stepOne();
    const history = [createUserMessage('Compute ((12+7)*3)*10'), assistant, createToolResultMessage({ callId: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', content: '19' })];
    rig.server.enqueue({ fixture: MULTISTEP, part: 1 });
    await run(rig.harness, { provider: 'openai', model: 'gpt-5' }, { messages: history, tools: [calculator] });
    const request = rig.server.requests.at(-1)!;
    expect(request.path).toBe('/v1/responses');
    expect(request.body.input).toEqual([
      { role: 'user', content: [{ type: 'input_text', text: 'Compute ((12+7)*3)*10' }] },
      { type: 'reasoning', id: 'rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9', summary: [{ type: 'summary_text', text: summary }], encrypted_content: encrypted },
      { type: 'function_call', id: 'fc_01830d662ab3856501693c32151234819091cfca267e98cc5f', call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', name: 'calculator', arguments: '{"a":12,"b":7,"op":"add"}' },
      { type: 'function_call_output', call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', output: '19' },
    ]);
    expect(request.rawBody).toContain(JSON.stringify(encrypted));
    expect(request.body.include).toEqual(['reasoning.encrypted_content']);
    expect(request.body.store).toBe(false);
  });

  it('a text answer goes back as its message item; opaque reasoning (gpt-5) too', async () => {
    rig.server.enqueue('openai-responses/gpt5-reasoning-item-then-function-call.sse');
    const first = await run(rig.harness, { provider: 'openai', model: 'gpt-5' });
    rig.server.enqueue('openai-responses/text-output-text-delta.sse');
    const second = await run(rig.harness, { provider: 'openai', model: 'gpt-5' });
    const history = [
      createUserMessage('q'),
      createAssistantMessage({ content: first.result.content, provider: 'openai', model: 'gpt-5', replayState: first.result.replayState }),
      createToolResultMessage({ callId: 'call_CWXgs68YprAjp6t0371hiPOI', content: 'ok' }),
      createAssistantMessage({ content: second.result.content, provider: 'openai', model: 'gpt-5', replayState: second.result.replayState }),
      createUserMessage('thanks'),
    ];
    rig.server.enqueue('openai-responses/text-output-text-delta.sse');
    await run(rig.harness, { provider: 'openai', model: 'gpt-5' }, { messages: history });
    const input = rig.server.requests.at(-1)!.body.input;
    expect(input[1]).toEqual({
      type: 'reasoning',
      id: 'rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405',
      summary: [],
      encrypted_content: encryptedOf('openai-responses/gpt5-reasoning-item-then-function-call.sse', 0, 'response.output_item.done'),
    });
    expect(input[2]).toMatchObject({ type: 'function_call', id: 'fc_0050471a34b36ae60068c97bf19d9c819590eaf42c0edc1042', call_id: 'call_CWXgs68YprAjp6t0371hiPOI' });
    expect(input[4]).toEqual({
      type: 'message',
      role: 'assistant',
      id: 'msg_67e554a28bec8191b56d3e2331eff88006c52f0e511c76ed',
      status: 'completed',
      content: [{ type: 'output_text', text: 'The capital of France is Paris.', annotations: [] }],
    });
  });

  it('none of it when the history came from another adapter kind or provider (degrade reported once)', async () => {
    const { assistant } = await stepOne();
    const adapter = adapterOf<OpenAIResponsesAdapter>(rig.harness, 'openai');
    const state = (assistant.source as { replayState: unknown }).replayState;
    const fromChat = createAssistantMessage({
      content: assistant.content,
      provider: 'openai',
      model: 'gpt-5',
      replayState: { response: { kind: 'openai-chat', version: 1 }, blocks: [{ field: 'reasoning' }, null] },
    });
    const fromGateway = createAssistantMessage({ content: assistant.content, provider: 'gateway', model: 'gpt-5', replayState: state as never });
    for (const message of [fromChat, fromGateway]) {
      const before = adapter.degradeCount;
      const history = [createUserMessage('Compute'), message, createToolResultMessage({ callId: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', content: '19' })];
      for (let i = 0; i < 2; i++) {
        rig.server.enqueue({ fixture: MULTISTEP, part: 1 });
        await run(rig.harness, { provider: 'openai', model: 'gpt-5' }, { messages: history });
        const request = rig.server.requests.at(-1)!;
        expect(request.body.input).toEqual([
          { role: 'user', content: [{ type: 'input_text', text: 'Compute' }] },
          { type: 'function_call', call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', name: 'calculator', arguments: '{"a":12,"b":7,"op":"add"}' },
          { type: 'function_call_output', call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', output: '19' },
        ]);
        expect(request.rawBody).not.toContain('gAAAAAB');
        expect(request.rawBody).not.toContain('rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9');
      }
      expect(adapter.degradeCount).toBe(before + 1);
      expect(adapter.lastDegrade?.messageId).toBe(message.id);
    }
  });

  it('a chat route never receives Responses replay state', async () => {
    const { assistant } = await stepOne();
    const history = [
      createUserMessage('Compute'),
      createAssistantMessage({ content: assistant.content, provider: 'chatty', model: 'm', replayState: (assistant.source as unknown as { replayState: never }).replayState }),
    ];
    rig.server.enqueue('openai-compatible/hf-router-novita-usage-chunk-empty-choices.sse');
    await run(rig.harness, { provider: 'chatty', model: 'm' }, { messages: [...history, createToolResultMessage({ callId: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', content: '19' })] });
    const request = rig.server.requests.at(-1)!;
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.body.messages[1]).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', type: 'function', function: { name: 'calculator', arguments: '{"a":12,"b":7,"op":"add"}' } }],
    });
  });
});

describe('responses request serialisation', () => {
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  const tool = { name: 'lookup', description: 'Look a thing up.', inputSchema: { type: 'object', properties: { q: { type: 'string', minLength: 1 } }, required: ['q'] } };

  it('instructions, images, tools, tool results with images, effort + summary, max_output_tokens', async () => {
    rig.server.enqueue('openai-responses/text-output-text-delta.sse');
    const history: Message[] = [
      createUserMessage([
        { type: 'text', text: 'Look at this' },
        { type: 'image', mediaType: 'image/png', data: png },
      ]),
      createAssistantMessage({
        provider: 'someone-else',
        model: 'x',
        content: [
          { type: 'reasoning', text: 'private thoughts' },
          { type: 'text', text: 'Looking it up.' },
          { type: 'tool-call', id: 'c9', name: 'lookup', arguments: '{"q":"cat"}' },
        ],
      }),
      createToolResultMessage({
        callId: 'c9',
        content: [
          { type: 'text', text: 'a cat' },
          { type: 'image', mediaType: 'image/png', url: 'https://example.com/cat.png' },
        ],
      }),
    ];
    await run(rig.harness, { provider: 'openai', model: 'gpt-5', reasoningEffort: 'low', maxTokens: 777, temperature: 1 }, { system: 'You are terse.', tools: [tool], messages: history });
    const body = rig.server.requests.at(-1)!.body;
    expect(body).toMatchObject({
      model: 'gpt-5',
      stream: true,
      store: false,
      instructions: 'You are terse.',
      reasoning: { effort: 'low', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      max_output_tokens: 777,
      temperature: 1,
    });
    expect(body.tools).toEqual([{ type: 'function', name: 'lookup', description: 'Look a thing up.', parameters: tool.inputSchema, strict: false }]);
    expect(body.input).toEqual([
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'Look at this' },
          { type: 'input_image', image_url: `data:image/png;base64,${png}`, detail: 'auto' },
        ],
      },
      { role: 'assistant', content: 'Looking it up.' },
      { type: 'function_call', call_id: 'c9', name: 'lookup', arguments: '{"q":"cat"}' },
      {
        type: 'function_call_output',
        call_id: 'c9',
        output: [
          { type: 'input_text', text: 'a cat' },
          { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'auto' },
        ],
      },
    ]);
    expect(rig.server.requests.at(-1)!.rawBody).not.toContain('private thoughts');
  });
});
