/**
 * Traces from any journal (issue 21 item 2): every DeepSeek Harness fixture session, imported,
 * exports a well-formed span tree to a real OTLP/HTTP receiver; a journal cut by a crash exports its
 * open spans as INCOMPLETE, and the same journal after repair as an interrupted turn whose running
 * tool's outcome is unknown.
 */
import { readdirSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defineTool, importDshSession, readJournal, z, type AnySessionEvent } from '../../runtime/index.ts';
import { exportJournalTraces } from '../../plugins/otel/index.ts';
import { createTestHarness, runTurn, type TestHarness } from '../../testing/index.ts';
import { fixturesDir } from '../support/fixture-server.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './receiver.ts';

const DSH = join(fixturesDir, 'dsh-sessions');

/** Every `session.jsonl` of the fixtures (their subagent children are sessions of their own). */
function dshSessions(): string[] {
  const out: string[] = [];
  for (const agent of readdirSync(DSH, { withFileTypes: true })) {
    if (!agent.isDirectory()) continue;
    for (const name of readdirSync(join(DSH, agent.name))) {
      const file = join(DSH, agent.name, name, 'session.jsonl');
      if (existsSync(file)) out.push(file);
    }
  }
  return out.sort();
}

let receiver: OtlpReceiver | undefined;
let harness: TestHarness | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
  await harness?.dispose();
  harness = undefined;
});

function checkTree(spans: readonly ReceivedSpan[]): void {
  const byId = new Map(spans.map((span) => [span.spanId, span]));
  for (const span of spans) {
    expect(span.endMs, span.name).toBeGreaterThanOrEqual(span.startMs);
    if (span.name.startsWith('invoke_agent')) expect(span.parentSpanId).toBeUndefined();
    else {
      const parent = byId.get(span.parentSpanId!);
      expect(parent, `${span.name} has its parent`).toBeDefined();
      expect(span.startMs).toBeGreaterThanOrEqual(parent!.startMs);
      expect(span.endMs).toBeLessThanOrEqual(parent!.endMs);
    }
  }
}

const count = (events: readonly AnySessionEvent[], test: (event: AnySessionEvent) => boolean) => events.filter(test).length;

/** Model calls: each finish chunk, and each assistant message whose stream never finished (cancelled). */
function modelCalls(events: readonly AnySessionEvent[]): number {
  let calls = 0;
  let finished = false;
  for (const event of events) {
    if (event.type === 'assistant/chunk' && (event.data as { chunk: { type: string } }).chunk.type === 'finish') {
      calls++;
      finished = true;
    } else if (event.type === 'assistant/message') {
      if (!finished) calls++;
      finished = false;
    } else if (event.type === 'step/start' || event.type === 'llm/retry') finished = false;
  }
  return calls;
}

describe('exportJournalTraces: any journal', () => {
  it('every DeepSeek Harness fixture session, imported, gives one turn span per turn, one chat span per model call, one execute_tool span per result', async () => {
    const files = dshSessions();
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      receiver = await startOtlpReceiver();
      const imported = await importDshSession(file);
      const events = imported.events;
      const report = await exportJournalTraces(imported.header.id, events, { endpoint: receiver.url, metrics: false });
      const spans = receiver.spans;
      const turns = count(events, (e) => e.type === 'turn/start');
      const calls = modelCalls(events);
      const results = count(events, (e) => e.type === 'tool/result');
      expect([file, report.complete, report.droppedSpanCount, report.failedSpanCount, report.exportedSpanCount]).toEqual([file, true, 0, 0, spans.length]);
      expect([file, spans.filter((s) => s.name.startsWith('invoke_agent')).length]).toEqual([file, turns]);
      expect([file, spans.filter((s) => s.name.startsWith('chat ')).length]).toEqual([file, calls]);
      expect([file, spans.filter((s) => s.name.startsWith('execute_tool ')).length]).toEqual([file, results]);
      expect(spans.every((s) => s.attributes['gen_ai.conversation.id'] === imported.header.id)).toBe(true);
      checkTree(spans);
      await receiver.close();
      receiver = undefined;
    }
  });

  it('a journal cut by a crash mid-tool: open spans end INCOMPLETE at its last event; after repair: an interrupted turn, the tool TOOL_OUTCOME_UNKNOWN', async () => {
    const slow = defineTool({ name: 'slow', description: 'Takes a while.', input: z.object({}), permission: 'read', execute: () => 'done' });
    harness = await createTestHarness({ script: [{ toolCalls: [{ name: 'slow', arguments: {}, id: 'call-slow' }] }, { text: 'Finished.' }], tools: [slow] });
    const turn = await runTurn(harness, 'Run the slow tool.');
    await turn.session.close();
    // The crash: everything after the tool body started is lost.
    const lines = readFileSync(turn.session.path, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
    const startSeq = turn.events.find((e) => e.type === 'tool/start')!.seq;
    const crashed = join(harness.dir, 'data', 'sessions', 'crashed.jsonl');
    writeFileSync(crashed, `${lines.slice(0, 1 + startSeq).join('\n')}\n`.replace(`"id":"${turn.session.id}"`, '"id":"crashed"'));

    receiver = await startOtlpReceiver();
    await exportJournalTraces('crashed', readJournal(crashed), { endpoint: receiver.url, metrics: false });
    const cut = receiver.spans;
    const lastAtMs = turn.events.find((e) => e.seq === startSeq)!.atMs;
    // The model call completed before the cut: it ends at its own recorded end, which may share the
    // millisecond of the tool's start — so only the open spans are pinned to the last event's time.
    const open = (s: { name: string }) => s.name !== 'chat test';
    expect(cut.map((s) => [s.name, s.attributes['error.type'] ?? null, open(s) ? s.endMs === lastAtMs : s.endMs <= lastAtMs]).sort()).toEqual([
      ['chat test', null, true],
      ['execute_tool slow', 'INCOMPLETE', true],
      ['invoke_agent harness', 'INCOMPLETE', true],
      ['step', 'INCOMPLETE', true],
    ]);
    checkTree(cut);
    await receiver.close();

    // Repair (a writable open closes the turn with synthetic events), then export again.
    const { session } = await harness.openSession(crashed);
    await session.close();
    receiver = await startOtlpReceiver();
    await exportJournalTraces('crashed', readJournal(crashed), { endpoint: receiver.url, metrics: false });
    const repaired = receiver.spans;
    const root = repaired.find((s) => s.name === 'invoke_agent harness')!;
    expect(root.attributes['harness.turn.end_reason']).toBe('interrupted');
    expect(root.status.code).toBe(2);
    expect(repaired.find((s) => s.name === 'execute_tool slow')!.attributes['error.type']).toBe('TOOL_OUTCOME_UNKNOWN');
    checkTree(repaired);
  });
});
