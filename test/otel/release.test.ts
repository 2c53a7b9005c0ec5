/**
 * The otel plugin holds nothing of a session between its turns but a bounded summary (issue 21):
 * after 200 sequential sessions with tool calls no tracer is left and at most `maxIdleSessions`
 * summaries; a session whose tracer was released and rebuilt between its turns gives the spans its
 * journal gives (a second turn with no `request/header` of its own and a retried call, with
 * content captured); a kept subagent resumed in the parent's next turn hangs under the
 * `input_subagent` call of that turn, live and from the journal, and a later turn of the child run on
 * its own is a trace of its own. Real OTLP/HTTP receiver on 127.0.0.1.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, defineTool, readJournal, z, type Harness, type PluginSpec } from '../../runtime/index.ts';
import retryPlugin from '../../plugins/llm-retry/index.ts';
import otelPlugin, { exportJournalTraces } from '../../plugins/otel/index.ts';
import { createTestHarness, runTurn, type ScriptFunction } from '../../testing/index.ts';
import { plugin, tempDir, type JsonScriptLike } from '../agent/support.ts';
import { subagentConfig } from '../subagents/support.ts';
import { receiverPerTest, type ReceivedSpan } from './receiver.ts';

const receiver = receiverPerTest();
let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

const add = defineTool({ name: 'add', description: 'Adds two numbers.', input: z.object({ a: z.number(), b: z.number() }), permission: 'read', execute: ({ a, b }) => String(a + b) });

/** The tree without ids: every span's name, times, attributes, events, status and children in start order. */
function detailed(spans: readonly ReceivedSpan[]): unknown[] {
  const node = (span: ReceivedSpan): unknown => ({
    name: span.name,
    startMs: span.startMs,
    endMs: span.endMs,
    attributes: span.attributes,
    events: span.events,
    status: span.status,
    children: spans
      .filter((child) => child.parentSpanId === span.spanId)
      .sort((a, b) => a.startMs - b.startMs || a.name.localeCompare(b.name))
      .map(node),
  });
  return spans
    .filter((span) => span.parentSpanId === undefined)
    .sort((a, b) => a.startMs - b.startMs)
    .map(node);
}

describe('otel plugin: tracers are released between turns', { timeout: 300_000 }, () => {
  it('after 200 sequential sessions with tool calls it holds no tracer and at most maxIdleSessions summaries', async () => {
    const live = await receiver();
    const script: ScriptFunction = (context) => (context.step === 1 ? { toolCalls: [{ name: 'add', arguments: { a: 1, b: 2 }, id: 'call-add' }] } : { text: 'Three.' });
    const test = await createTestHarness({ script, tools: [add], plugins: [{ plugin: otelPlugin, config: { endpoint: live.url, scheduledDelayMs: 50, metrics: false, maxIdleSessions: 8 } }] });
    harness = test;
    for (let n = 0; n < 200; n++) {
      const turn = await runTurn(test, `Add them (${n}).`);
      expect(turn.end.reason).toBe('completed');
      await turn.session.close();
    }
    expect(test.ctx.otel!.sessionCounts()).toEqual({ tracingSessionCount: 0, idleSessionCount: 8 });
    // Every session was traced: invoke_agent, 2 steps, 2 chat, 1 execute_tool each.
    await test.ctx.otel!.flush(30_000);
    expect(test.ctx.otel!.stats()).toMatchObject({ exportedSpanCount: 200 * 6, droppedSpanCount: 0 });
  });

  it('a session released and rebuilt between its turns (no request/header in turn 2, a retried call, content on) gives the spans of its journal', async () => {
    const live = await receiver();
    let failed = false;
    const script: ScriptFunction = (context) => {
      if (context.step === 1) return { text: 'Adding.', toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 }, id: `call-${context.turn}` }], usage: { inputTokens: 10, outputTokens: 2 } };
      // Turn 2's last call fails once (retried): a failed call names its model from the call config only.
      if (context.turn === 2 && !failed) {
        failed = true;
        return { error: { code: 'SERVER', message: 'The scripted provider is overloaded.' } };
      }
      return { text: `Five (turn ${context.turn}).`, usage: { inputTokens: 20, outputTokens: 3 } };
    };
    const plugins: PluginSpec[] = [
      { plugin: retryPlugin, config: { maxRetries: 2, initialDelayMs: 20, maxDelayMs: 100, jitterRatio: 0 } },
      { plugin: otelPlugin, config: { endpoint: live.url, scheduledDelayMs: 20, metrics: false, captureContent: true } },
    ];
    const test = await createTestHarness({ script, tools: [add], plugins });
    harness = test;
    const session = await test.createSession();
    const first = await runTurn(session, 'Add two and three.');
    expect(first.end.reason).toBe('completed');
    // Between the turns only the summary is held.
    expect(test.ctx.otel!.sessionCounts()).toEqual({ tracingSessionCount: 0, idleSessionCount: 1 });
    const second = await runTurn(session, 'Once more, please.');
    expect(second.end.reason).toBe('completed');
    expect(second.events.some((event) => event.type === 'request/header')).toBe(false);
    expect(second.events.some((event) => event.type === 'llm/retry')).toBe(true);
    await session.close();
    await test.ctx.otel!.flush();
    // Per turn: invoke_agent, 2 steps, chat + execute_tool, chat (turn 2: one more, the failed attempt).
    const spans = await live.waitForSpans(13);
    expect(spans).toHaveLength(13);
    const chats = spans.filter((span) => span.name.startsWith('chat ') && span.attributes['harness.turn'] === 2);
    expect(chats.map((span) => [span.name, span.attributes['gen_ai.provider.name'], span.attributes['error.type'] ?? null]).sort()).toEqual([
      ['chat test', 'scripted', null],
      ['chat test', 'scripted', null],
      ['chat test', 'scripted', 'SERVER'],
    ]);
    // Turn 2's last request holds turn 1's 4 messages and its own 3: the snapshot reader was carried over.
    const last = chats.find((span) => span.attributes['harness.step'] === 2 && span.attributes['error.type'] === undefined)!;
    expect((JSON.parse(last.attributes['gen_ai.input.messages'] as string) as unknown[]).length).toBe(7);

    const later = await receiver();
    await exportJournalTraces(session.id, readJournal(session.path), { endpoint: later.url, metrics: false, captureContent: true });
    expect(later.spans).toHaveLength(13);
    expect(detailed(spans)).toEqual(detailed(later.spans));
  });

  it("a kept subagent resumed in the parent's next turn hangs under that turn's input_subagent call, live and from the journal; nothing is held after", async () => {
    const CHILD = 'otel-release-parent.sub1';
    const script: JsonScriptLike = {
      replies: [
        { when: { userIncludes: 'child task one' }, reply: { text: 'ONE' } },
        { when: { userIncludes: 'child task two' }, reply: { text: 'TWO' } },
        { when: { userIncludes: 'delegate', step: 1 }, reply: { toolCalls: [{ name: 'run_subagent', arguments: { prompt: 'child task one', keep: true } }] } },
        { when: { userIncludes: 'delegate', step: 2 }, reply: { text: 'PARENT_ONE' } },
        { when: { userIncludes: 'resume', step: 1 }, reply: { toolCalls: [{ name: 'input_subagent', arguments: { subagentId: CHILD, prompt: 'child task two', close: true } }] } },
        { when: { userIncludes: 'resume', step: 2 }, reply: { text: 'PARENT_TWO' } },
      ],
    };
    const live = await receiver();
    const dir = tempDir('harness-otel-release-');
    const config = subagentConfig(script, dir);
    harness = await createHarness({
      dataDir: join(dir, 'data'),
      config: { ...config, plugins: [...config.plugins!, { module: plugin('otel'), config: { endpoint: live.url, scheduledDelayMs: 20, metrics: false } }] },
    });
    const parent = await harness.createSession({ id: 'otel-release-parent', cwd: dir });
    expect((await parent.prompt('delegate this', { approve: () => 'allow' })).text).toBe('PARENT_ONE');
    expect(harness.ctx.otel!.sessionCounts()).toEqual({ tracingSessionCount: 0, idleSessionCount: 2 });
    expect((await parent.prompt('resume the kept one', { approve: () => 'allow' })).text).toBe('PARENT_TWO');
    await parent.close();
    // A turn of the child run on its own, outside any call of the parent: a trace of its own (the
    // call that ran its last turn has ended), live and from the journal.
    const { session: child } = await harness.openSession(CHILD);
    expect((await child.prompt('child task one again', { approve: () => 'allow' })).text).toBe('ONE');
    await child.close();
    expect(harness.ctx.otel!.sessionCounts()).toEqual({ tracingSessionCount: 0, idleSessionCount: 2 });
    await harness.ctx.otel!.flush();
    // Parent: 2 × (invoke_agent, 2 steps, 2 chat, execute_tool); child: 3 × (invoke_agent, step, chat).
    const spans = await live.waitForSpans(21);
    expect(spans).toHaveLength(21);
    const third = spans.find((span) => span.name === 'invoke_agent harness' && span.attributes['harness.turn'] === 3)!;
    expect(third.parentSpanId).toBeUndefined();
    const input = spans.find((span) => span.name === 'execute_tool input_subagent')!;
    const childTurns = spans.filter((span) => span.name === 'invoke_agent harness' && span.attributes['gen_ai.conversation.id'] === CHILD);
    const second = childTurns.find((span) => span.attributes['harness.turn'] === 2)!;
    expect([second.parentSpanId, second.traceId]).toEqual([input.spanId, input.traceId]);
    expect(input.attributes['harness.turn']).toBe(2);

    const later = await receiver();
    await exportJournalTraces(parent.id, readJournal(parent.path), { endpoint: later.url, metrics: false, store: harness.store });
    expect(later.spans).toHaveLength(21);
    expect(detailed(later.spans)).toEqual(detailed(spans));
  });
});
