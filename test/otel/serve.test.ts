/**
 * An incoming `traceparent` in `harness serve` (issue 21): the POST that submits a turn carries the
 * W3C `traceparent` / `tracestate` headers; the turn's `invoke_agent` span (live, to a real OTLP/HTTP
 * receiver on 127.0.0.1) has that trace id and parent span id, and so does the span exported later
 * from the journal, which recorded the context on `turn/start`. A malformed header is ignored with a
 * counted `INVALID_TRACE_CONTEXT` warning: the turn runs and starts a trace of its own.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, defineTool, readJournal, z, type AnySessionEvent, type Diagnostic, type Harness } from '../../runtime/index.ts';
import { exportJournalTraces } from '../../plugins/otel/index.ts';
import { serveConfigSchema, startServer, type RunningServer } from '../../plugins/serve/index.ts';
import { plugin, tempDir } from '../agent/support.ts';
import { receiverPerTest, type ReceivedSpan } from './receiver.ts';

const TOKEN = 'otel-serve-token-0123456789';
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_SPAN_ID = 'b7ad6b7169203331';
const JOB_SPAN_ID = '53995c3f42cd8ad8';
const TRACESTATE = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE';
/** Turn 1 calls `peek` once, then answers: invoke_agent, 2 steps, 2 chat, 1 execute_tool. */
const SPANS_OF_TURN_1 = 6;
/** Turns 2 and 3 answer at once: invoke_agent, step, chat. */
const SPANS_OF_TURN_2 = 3;

const receiver = receiverPerTest();
let harness: Harness | undefined;
let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  await harness?.dispose();
  server = undefined;
  harness = undefined;
});

async function served(endpoint: string): Promise<{ harness: Harness; server: RunningServer; diagnostics: Diagnostic[] }> {
  const dir = tempDir('harness-otel-serve-');
  const scriptPath = join(dir, 'script.json');
  writeFileSync(
    scriptPath,
    JSON.stringify({
      replies: [
        { when: { userIncludes: 'peek', step: 1 }, reply: { text: 'Peeking.', toolCalls: [{ name: 'peek', arguments: { key: 'a' } }] } },
        { when: { userIncludes: 'peek', step: 2 }, reply: { text: 'Peeked.' } },
        { reply: { text: 'Hello from the scripted model.' } },
      ],
    }),
  );
  harness = await createHarness({
    dataDir: join(dir, 'data'),
    config: {
      defaults: { provider: 'scripted', model: 'test' },
      plugins: [
        { module: plugin('llm-scripted'), config: { scripts: { test: scriptPath } } },
        { module: plugin('approvals') },
        { module: plugin('otel'), config: { endpoint, scheduledDelayMs: 20, metrics: false } },
      ],
    },
  });
  const diagnostics: Diagnostic[] = [];
  harness.kernel.bus.add('kernel/diagnostic', (diagnostic: Diagnostic) => void diagnostics.push(diagnostic), { owner: 'test' });
  harness.ctx.tools.register(defineTool({ name: 'peek', description: 'Reads a value.', input: z.object({ key: z.string() }), permission: 'read', execute: ({ key }) => `value of ${key}` }));
  server = await startServer(harness, serveConfigSchema.parse({ port: 0 }), { token: TOKEN, cwd: dir });
  return { harness, server, diagnostics };
}

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server!.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

/** Submits a turn over HTTP with `headers` and waits for its end. */
async function turnOverHttp(sessionId: string, prompt: string, headers: Record<string, string>): Promise<void> {
  const submitted = await api('POST', `/v1/sessions/${sessionId}/turns`, { prompt, approve: 'allow-all' }, headers);
  expect(submitted.status).toBe(202);
  const end = await server!.turns.turnEnd(sessionId, submitted.body.turn.turn);
  expect(end?.data.reason).toBe('completed');
}

const turnSpan = (spans: readonly ReceivedSpan[], turn: number): ReceivedSpan => spans.find((span) => span.name === 'invoke_agent harness' && span.attributes['harness.turn'] === turn)!;

/** The spans of a turn as a tree without ids (each span's name, times, attributes and children). */
function turnTree(spans: readonly ReceivedSpan[], turn: number): unknown {
  const node = (span: ReceivedSpan): unknown => ({
    name: span.name,
    startMs: span.startMs,
    endMs: span.endMs,
    attributes: span.attributes,
    traceState: span.traceState ?? null,
    children: spans
      .filter((child) => child.parentSpanId === span.spanId)
      .sort((a, b) => a.startMs - b.startMs || a.name.localeCompare(b.name))
      .map(node),
  });
  return node(turnSpan(spans, turn));
}

describe('otel + harness serve: a traceparent header parents the turn', () => {
  it("a POST's traceparent and tracestate parent the turn live and from the journal; a malformed one is ignored, counted, and the turn starts its own trace", async () => {
    const live = await receiver();
    const { diagnostics } = await served(live.url);
    const created = await api('POST', '/v1/sessions', {});
    expect(created.status).toBe(201);
    const sessionId = created.body.session.id as string;

    await turnOverHttp(sessionId, 'peek at a', { traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01`, tracestate: TRACESTATE });
    // Uppercase hex: not W3C trace context.
    await turnOverHttp(sessionId, 'hello', { traceparent: `00-${TRACE_ID.toUpperCase()}-${PARENT_SPAN_ID}-01` });
    // A queued turn's job (what a worker of `harness serve --queue` runs) carries the context too.
    const job = await server!.turns.runJob(sessionId, 'job-3', JSON.parse(JSON.stringify({ prompt: 'hello again', approve: 'allow-all', trace: { traceparent: `00-${TRACE_ID}-${JOB_SPAN_ID}-01` } })));
    expect(job).toMatchObject({ outcome: 'ran', end: { data: { reason: 'completed' } } });
    await harness!.ctx.otel!.flush();
    const spans = await live.waitForSpans(SPANS_OF_TURN_1 + 2 * SPANS_OF_TURN_2);

    // Turn 1: a child of the caller's span, in its trace, every span of the turn too.
    const first = turnSpan(spans, 1);
    expect([first.traceId, first.parentSpanId, first.traceState]).toEqual([TRACE_ID, PARENT_SPAN_ID, TRACESTATE]);
    const ofFirst = spans.filter((span) => span.attributes['harness.turn'] === 1);
    expect(ofFirst).toHaveLength(SPANS_OF_TURN_1);
    expect(new Set(ofFirst.map((span) => span.traceId))).toEqual(new Set([TRACE_ID]));
    // Turn 2: its own trace (a root span), and the turn did not fail.
    const second = turnSpan(spans, 2);
    expect(second.parentSpanId).toBeUndefined();
    expect(second.traceId).not.toBe(TRACE_ID);
    expect(second.attributes['harness.turn.end_reason']).toBe('completed');
    const third = turnSpan(spans, 3);
    expect([third.traceId, third.parentSpanId]).toEqual([TRACE_ID, JOB_SPAN_ID]);
    const warnings = diagnostics.filter((diagnostic) => diagnostic.code === 'INVALID_TRACE_CONTEXT');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.level).toBe('warning');
    expect(warnings[0]!.message).toContain('1 ignored by this harness so far');
    // The header's value is never echoed.
    expect(warnings[0]!.message).not.toContain(TRACE_ID.toUpperCase());

    // The journal holds the checked context on turn 1's turn/start, nothing on turn 2's.
    const path = join(harness!.dataDir, 'sessions', `${sessionId}.jsonl`);
    const events: AnySessionEvent[] = [];
    for await (const event of readJournal(path)) events.push(event);
    const starts = events.filter((event) => event.type === 'turn/start').map((event) => event.data);
    expect(starts).toEqual([
      { turn: 1, trace: { traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01`, tracestate: TRACESTATE } },
      { turn: 2 },
      { turn: 3, trace: { traceparent: `00-${TRACE_ID}-${JOB_SPAN_ID}-01` } },
    ]);

    // From the journal: the same parentage and the same trees.
    const later = await receiver();
    const report = await exportJournalTraces(sessionId, events, { endpoint: later.url, metrics: false });
    expect(report).toMatchObject({ turnCount: 3, exportedSpanCount: SPANS_OF_TURN_1 + 2 * SPANS_OF_TURN_2, droppedSpanCount: 0, complete: true });
    const exportedFirst = turnSpan(later.spans, 1);
    expect([exportedFirst.traceId, exportedFirst.parentSpanId, exportedFirst.traceState]).toEqual([TRACE_ID, PARENT_SPAN_ID, TRACESTATE]);
    expect(turnSpan(later.spans, 2).parentSpanId).toBeUndefined();
    expect(turnTree(later.spans, 1)).toEqual(turnTree(spans, 1));
    expect(turnTree(later.spans, 2)).toEqual(turnTree(spans, 2));
    expect(turnTree(later.spans, 3)).toEqual(turnTree(spans, 3));
    expect(turnSpan(later.spans, 3).parentSpanId).toBe(JOB_SPAN_ID);
  });
});
