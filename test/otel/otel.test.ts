/**
 * plugins/otel against a real OTLP/HTTP receiver on 127.0.0.1 (issue 21 acceptance): a scripted turn
 * with two tool calls and a retried model call, exported live by the official SDK's JSON exporter;
 * the span tree, names and GenAI attributes; no content by default, content when enabled; a
 * sentinel API key never sent; the spans exported from the session's journal equal the live ones
 * (ids aside); an incoming traceparent parents the turn.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineTool, readJournal, z, type PluginSpec } from '../../runtime/index.ts';
import retryPlugin from '../../plugins/llm-retry/index.ts';
import otelPlugin, { exportJournalTraces } from '../../plugins/otel/index.ts';
import { createTestHarness, runTurn, type ScriptFunction, type TestHarness } from '../../testing/index.ts';
import { receiverPerTest, type ReceivedSpan } from './receiver.ts';

// A key the process knows as a secret (a `*_API_KEY` variable), which the model and a tool echo.
const SENTINEL = 'sk-sentinel-7f3a9c2e51d84b06';
process.env.OTEL_TEST_SENTINEL_API_KEY = SENTINEL;
const PROMPT = 'Please add the numbers and read the note (marker PROMPT-TEXT-4711).';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN_ID = '00f067aa0ba902b7';

const tools = [
  defineTool({
    name: 'add',
    description: 'Adds two numbers.',
    input: z.object({ a: z.number(), b: z.number() }),
    permission: 'read',
    execute: ({ a, b }) => String(a + b),
  }),
  defineTool({
    name: 'read_note',
    description: 'Reads the note.',
    input: z.object({}),
    permission: 'read',
    execute: () => `The note says: key ${process.env.OTEL_TEST_SENTINEL_API_KEY}`,
  }),
];

/** Step 1: two tool calls; step 2: a SERVER failure (retried), then the answer. */
function script(): ScriptFunction {
  let failed = false;
  return (context) => {
    if (context.step === 1) {
      return {
        text: 'Let me look.',
        toolCalls: [
          { name: 'add', arguments: { a: 2, b: 3 }, id: 'call-add' },
          { name: 'read_note', arguments: {}, id: 'call-note' },
        ],
        usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 50 },
      };
    }
    if (!failed) {
      failed = true;
      return { error: { code: 'SERVER', message: 'The scripted provider is overloaded.' } };
    }
    return { text: `The sum is 5 and the note mentions ${SENTINEL}.`, usage: { inputTokens: 200, outputTokens: 10 } };
  };
}

const receiver = receiverPerTest();
let harness: TestHarness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

async function tracedTurn(otel: Record<string, unknown>) {
  const plugins: PluginSpec[] = [
    { plugin: retryPlugin, config: { maxRetries: 2, initialDelayMs: 20, maxDelayMs: 100, jitterRatio: 0 } },
    { plugin: otelPlugin, config: { scheduledDelayMs: 20, metricExportIntervalMs: 60_000, ...otel } },
  ];
  harness = await createTestHarness({ script: script(), plugins, tools });
  const turn = await runTurn(harness, PROMPT);
  expect(turn.end.reason).toBe('completed');
  return turn;
}

/** Span count of the scripted turn: invoke_agent, 2 steps, 3 chat (one failed), 2 execute_tool. */
const SPAN_COUNT = 8;

function childrenOf(spans: readonly ReceivedSpan[], parent: ReceivedSpan): ReceivedSpan[] {
  return spans.filter((span) => span.parentSpanId === parent.spanId).sort((a, b) => a.startMs - b.startMs || a.name.localeCompare(b.name));
}

/** The tree without ids: each span's name, kind, times, attributes, events, status and children. */
function shape(spans: readonly ReceivedSpan[]): unknown {
  const ids = new Set(spans.map((span) => span.spanId));
  const node = (span: ReceivedSpan): unknown => ({
    name: span.name,
    kind: span.kind,
    startMs: span.startMs,
    endMs: span.endMs,
    attributes: span.attributes,
    events: span.events,
    status: span.status,
    children: childrenOf(spans, span).map(node),
  });
  return spans.filter((span) => span.parentSpanId === undefined || !ids.has(span.parentSpanId)).map(node);
}

describe('otel plugin: a scripted turn with two tool calls and a retry, live to an OTLP/HTTP receiver', () => {
  it('exports the span tree with GenAI names and attributes; no content by default; the journal exports the same spans', async () => {
    const live = await receiver();
    const turn = await tracedTurn({ endpoint: live.url });
    await harness!.ctx.otel!.flush();
    const spans = await live.waitForSpans(SPAN_COUNT);
    expect(spans).toHaveLength(SPAN_COUNT);
    const sessionId = turn.session.id;

    // The tree: invoke_agent → step 1 (chat, 2 × execute_tool), step 2 (failed chat with a retry event, chat).
    const roots = spans.filter((span) => span.parentSpanId === undefined);
    expect(roots.map((span) => span.name)).toEqual(['invoke_agent harness']);
    const root = roots[0]!;
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([root.traceId]));
    const steps = childrenOf(spans, root);
    expect(steps.map((span) => [span.name, span.attributes['harness.step']])).toEqual([
      ['step', 1],
      ['step', 2],
    ]);
    const first = childrenOf(spans, steps[0]!);
    expect(first.map((span) => span.name)).toEqual(['chat test', 'execute_tool add', 'execute_tool read_note']);
    const second = childrenOf(spans, steps[1]!);
    expect(second.map((span) => [span.name, span.attributes['harness.attempt'], span.attributes['error.type'] ?? null])).toEqual([
      ['chat test', 1, 'SERVER'],
      ['chat test', 2, null],
    ]);

    // The turn.
    expect(root.kind).toBe(1);
    expect(root.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'harness',
      'gen_ai.conversation.id': sessionId,
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'test',
      'harness.turn': 1,
      'harness.turn.end_reason': 'completed',
      // 100 + 50 cached and 200: the conventions count cached tokens as input.
      'gen_ai.usage.input_tokens': 350,
      'gen_ai.usage.output_tokens': 30,
      'gen_ai.usage.cache_read.input_tokens': 50,
    });
    expect(root.status.code).toBe(0);
    expect(root.resource['service.name']).toBe('harness');
    const turnStart = turn.events.find((event) => event.type === 'turn/start')!;
    const turnEnd = turn.events.find((event) => event.type === 'turn/end')!;
    expect([root.startMs, root.endMs]).toEqual([turnStart.atMs, turnEnd.atMs]);

    // The model calls.
    const [call1] = first;
    expect(call1!.kind).toBe(3);
    expect(call1!.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'test',
      'gen_ai.response.model': 'test',
      'gen_ai.conversation.id': sessionId,
      'gen_ai.request.stream': true,
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.response.time_to_first_chunk': expect.any(Number),
      'gen_ai.usage.input_tokens': 150,
      'gen_ai.usage.output_tokens': 20,
      'gen_ai.usage.cache_read.input_tokens': 50,
      'harness.turn': 1,
      'harness.step': 1,
      'harness.attempt': 1,
    });
    // Only counts the provider reported: no cache-creation or reasoning attributes.
    expect(Object.keys(call1!.attributes).filter((key) => /cache_creation|reasoning/.test(key))).toEqual([]);
    expect(call1!.attributes['gen_ai.response.time_to_first_chunk'] as number).toBeGreaterThanOrEqual(0);
    const [failed, retried] = second;
    expect(failed!.status).toEqual({ code: 2, message: 'The scripted provider is overloaded.' });
    expect(failed!.attributes['gen_ai.response.finish_reasons']).toEqual(['error']);
    expect(failed!.events.map((event) => [event.name, event.attributes])).toEqual([
      ['harness.retry', { 'harness.retry.attempt': 1, 'harness.retry.max_retries': 2, 'harness.retry.delay_ms': 20, 'error.type': 'SERVER' }],
    ]);
    // The retry starts once the wait is over.
    expect(retried!.startMs).toBeGreaterThanOrEqual(failed!.events[0]!.atMs + 20);
    expect(retried!.attributes).toMatchObject({ 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.usage.input_tokens': 200, 'gen_ai.usage.output_tokens': 10 });
    expect(retried!.status.code).toBe(0);

    // The tool calls, with their approvals.
    const [add, note] = first.slice(1);
    expect(add!.attributes).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'add',
      'gen_ai.tool.call.id': 'call-add',
      'gen_ai.tool.type': 'function',
      'gen_ai.conversation.id': sessionId,
      'harness.turn': 1,
      'harness.step': 1,
    });
    expect(add!.events.map((event) => [event.name, event.attributes])).toEqual([
      ['harness.approval', { 'harness.approval.decision': 'allow', 'harness.approval.decided_by': 'approver' }],
      ['harness.tool.start', {}],
    ]);
    expect(note!.attributes['gen_ai.tool.call.id']).toBe('call-note');
    expect(add!.endMs).toBeLessThanOrEqual(steps[0]!.endMs);

    // No content by default, and never the key.
    const sent = live.bodies.join('\n');
    expect(sent).not.toContain('PROMPT-TEXT-4711');
    expect(sent).not.toContain('The sum is 5');
    expect(sent).not.toContain('The note says');
    expect(sent).not.toContain(SENTINEL);
    expect(spans.some((span) => Object.keys(span.attributes).some((key) => key.startsWith('gen_ai.input') || key.startsWith('gen_ai.output') || key.includes('arguments')))).toBe(false);

    // The metrics: token usage per type, call durations (one with error.type), time to first chunk.
    const metrics = new Map(live.metrics.map((metric) => [metric.name, metric]));
    expect(metrics.get('gen_ai.client.token.usage')!.unit).toBe('{token}');
    const tokens = metrics.get('gen_ai.client.token.usage')!.points.map((point) => [point.attributes['gen_ai.token.type'], point.count, point.sum]);
    expect(tokens.sort()).toEqual([
      ['input', 2, 350],
      ['output', 2, 30],
    ]);
    const durations = metrics.get('gen_ai.client.operation.duration')!.points;
    expect(durations.map((point) => [point.attributes['error.type'] ?? '(none)', point.count]).sort()).toEqual([
      ['(none)', 2],
      ['SERVER', 1],
    ]);
    expect(metrics.get('gen_ai.client.operation.time_to_first_chunk')!.points.reduce((n, point) => n + point.count, 0)).toBe(2);

    // The same journal, exported after the fact: the same spans, ids aside.
    const later = await receiver();
    const report = await exportJournalTraces(sessionId, readJournal(turn.session.path), { endpoint: later.url });
    expect(report).toMatchObject({ url: `${later.url}/v1/traces`, turnCount: 1, exportedSpanCount: SPAN_COUNT, droppedSpanCount: 0, failedSpanCount: 0, complete: true });
    expect(later.spans).toHaveLength(SPAN_COUNT);
    expect(shape(later.spans)).toEqual(shape(spans));
  });

  it('captureContent: prompts, completions, tool arguments and results are exported — with the secret redacted; a traceparent parents the turn', async () => {
    const live = await receiver();
    const turn = await tracedTurn({ endpoint: live.url, captureContent: true, traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01`, headers: { authorization: `Bearer ${SENTINEL}-collector` } });
    await harness!.ctx.otel!.flush();
    const spans = await live.waitForSpans(SPAN_COUNT);
    const root = spans.find((span) => span.name === 'invoke_agent harness')!;
    expect([root.traceId, root.parentSpanId]).toEqual([TRACE_ID, PARENT_SPAN_ID]);
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([TRACE_ID]));
    // The collector's own header reached it, as a header.
    expect(live.headers[0]!.authorization).toBe(`Bearer ${SENTINEL}-collector`);

    const input = JSON.parse(root.attributes['gen_ai.input.messages'] as string);
    expect(input).toEqual([{ role: 'user', parts: [{ type: 'text', content: PROMPT }] }]);
    const output = JSON.parse(root.attributes['gen_ai.output.messages'] as string);
    expect(output).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'The sum is 5 and the note mentions [redacted OTEL_TEST_SENTINEL_API_KEY].' }] }]);
    const calls = spans.filter((span) => span.name === 'chat test').sort((a, b) => a.startMs - b.startMs);
    const lastInput = JSON.parse(calls[2]!.attributes['gen_ai.input.messages'] as string) as { role: string; parts: { type: string }[] }[];
    expect(lastInput.map((message) => [message.role, message.parts.map((part) => part.type)])).toEqual([
      ['user', ['text']],
      ['assistant', ['text', 'tool_call', 'tool_call']],
      ['tool', ['tool_call_response']],
      ['tool', ['tool_call_response']],
    ]);
    expect(JSON.parse(calls[0]!.attributes['gen_ai.output.messages'] as string)[0].finish_reason).toBe('tool_calls');
    const add = spans.find((span) => span.name === 'execute_tool add')!;
    expect(add.attributes).toMatchObject({ 'gen_ai.tool.call.arguments': '{"a":2,"b":3}', 'gen_ai.tool.call.result': '5' });
    const note = spans.find((span) => span.name === 'execute_tool read_note')!;
    expect(note.attributes['gen_ai.tool.call.result']).toBe('The note says: key [redacted OTEL_TEST_SENTINEL_API_KEY]');

    const sent = live.bodies.join('\n');
    expect(sent).toContain('PROMPT-TEXT-4711');
    expect(sent).not.toContain(SENTINEL);
    expect(turn.end.reason).toBe('completed');
  });
});
