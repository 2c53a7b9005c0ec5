import { afterEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool, readJournal, z, type AnySessionEvent, type Harness, type ToolDefinition } from '../../runtime/index.ts';
import { assertPaired, collect, ofType, recordingTools, scriptedHarness } from './support.ts';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

const allow = () => 'allow' as const;

const longAnswer = 'This answer is long enough to be cut in the middle of its stream. '.repeat(20);

describe('abort mid-stream', () => {
  it('keeps the delivered prefix as an interrupted message, ends the turn aborted, and the session resumes', async () => {
    harness = await scriptedHarness(
      {
        replies: [
          { when: { turn: 1 }, reply: { reasoning: 'Thinking about a long answer.', text: longAnswer } },
          { when: { turn: 2 }, reply: { text: 'Resumed fine.' } },
        ],
      },
      { paceMs: 2 },
    );
    const session = await harness.createSession();
    const controller = new AbortController();
    let textDeltas = 0;
    const events = await collect(session.run('tell me', { signal: controller.signal, approve: allow }), (event) => {
      if (event.type === 'assistant/chunk' && event.data.chunk.type === 'text-delta' && ++textDeltas === 5) controller.abort();
    });
    const end = ofType(events, 'turn/end')[0]!;
    expect(end.data.reason).toBe('aborted');
    expect(end.data.failure?.code).toBe('ABORTED');
    const message = ofType(events, 'assistant/message')[0]!;
    expect(message.data.interrupted).toBe(true);
    const [reasoning, text] = message.data.message.content;
    expect(reasoning).toEqual({ type: 'reasoning', text: 'Thinking about a long answer.' });
    expect(text!.type).toBe('text');
    const delivered = ofType(events, 'assistant/chunk')
      .map((e) => e.data.chunk)
      .filter((c) => c.type === 'text-delta')
      .map((c) => (c as { text: string }).text)
      .join('');
    expect((text as { text: string }).text).toBe(delivered);
    expect(delivered.length).toBeGreaterThan(0);
    expect(delivered.length).toBeLessThan(longAnswer.length);
    // Nothing after the aborted finish chunk.
    const chunks = ofType(events, 'assistant/chunk').map((e) => e.data.chunk);
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', finish: { kind: 'aborted' } });
    await session.close();

    // Resume: a new loop continues the same journal; its header says `resume`.
    const { session: resumed } = await harness.openSession(session.id);
    const next = await collect(resumed.run('again', { approve: allow }));
    expect(ofType(next, 'turn/end')[0]!.data.reason).toBe('completed');
    expect(ofType(next, 'request/header')[0]!.data.reason).toBe('resume');
    expect(ofType(next, 'turn/start')[0]!.data.turn).toBe(2);
    const surface = resumed.state.messages;
    expect(surface.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    assertPaired(surface);
  });

  it('abort while two tool calls run in parallel answers both as aborted, promptly, paired', async () => {
    const started: string[] = [];
    const controller = new AbortController();
    const slow = (name: string): ToolDefinition =>
      defineTool({
        name,
        description: 'Waits for a long time.',
        input: z.object({}),
        permission: 'read',
        execute: async (_input, context) => {
          started.push(name);
          if (started.length === 2) setTimeout(() => controller.abort(), 20);
          await sleep(60_000, undefined, { signal: context.signal }).catch(() => undefined);
          return 'finished';
        },
      });
    harness = await scriptedHarness(
      { replies: [{ when: { step: 1 }, reply: { toolCalls: [{ name: 'slow_a' }, { name: 'slow_b' }] } }, { reply: { text: 'unreachable' } }] },
      { tools: [slow('slow_a'), slow('slow_b')] },
    );
    const session = await harness.createSession();
    const begun = Date.now();
    const events = await collect(session.run('go', { signal: controller.signal, approve: allow }));
    expect(Date.now() - begun).toBeLessThan(5_000);
    expect(started.sort()).toEqual(['slow_a', 'slow_b']);
    const results = ofType(events, 'tool/result');
    expect(results.map((r) => [r.data.code, r.data.message.content[0].isError])).toEqual([
      ['ABORTED', true],
      ['ABORTED', true],
    ]);
    expect(ofType(events, 'turn/end')[0]!.data.reason).toBe('aborted');
    assertPaired(session.state.messages);
  });
});

describe('max-tokens', () => {
  it('drops the truncated tool call, ends the turn max-tokens, and the session resumes with a valid history', async () => {
    const ran: string[] = [];
    harness = await scriptedHarness(
      {
        replies: [
          { when: { turn: 1 }, reply: { text: 'I will write a long value.', toolCalls: [{ name: 'poke', arguments: { key: 'k', value: 'x'.repeat(200) } }], finish: 'max-tokens' } },
          { when: { turn: 2 }, reply: { text: 'Continuing.' } },
        ],
      },
      { tools: recordingTools(ran) },
    );
    const session = await harness.createSession();
    const events = await collect(session.run('write', { approve: allow }));
    expect(ofType(events, 'turn/end')[0]!.data.reason).toBe('max-tokens');
    const message = ofType(events, 'assistant/message')[0]!.data;
    expect(message.finish.kind).toBe('max-tokens');
    expect(message.message.content).toEqual([{ type: 'text', text: 'I will write a long value.' }]);
    expect(ofType(events, 'tool/call')).toHaveLength(0);
    expect(ran).toEqual([]);
    await session.close();
    const { session: resumed } = await harness.openSession(session.path);
    const next = await collect(resumed.run('go on', { approve: allow }));
    expect(ofType(next, 'turn/end')[0]!.data.reason).toBe('completed');
    assertPaired(resumed.state.messages);
  });
});

describe('close-out inside the loop', () => {
  it('a hanging tool times out, a throwing tool is an error, a 10 MB output keeps its head — all paired', async () => {
    const tools = [
      defineTool({ name: 'hang', description: 'Never returns.', input: z.object({}), permission: 'read', timeoutMs: 100, execute: () => new Promise<string>(() => undefined) }),
      defineTool({
        name: 'boom',
        description: 'Throws.',
        input: z.object({}),
        permission: 'read',
        execute: () => {
          throw new Error('kaboom');
        },
      }),
      defineTool({
        name: 'flood',
        description: 'Prints 10 MB.',
        input: z.object({}),
        permission: 'read',
        maxOutputChars: 1000,
        execute: () => ({ content: 'y'.repeat(10_000_000), exitCode: 3, isError: true }),
      }),
    ];
    harness = await scriptedHarness(
      {
        replies: [
          { when: { step: 1 }, reply: { toolCalls: [{ name: 'hang' }, { name: 'boom' }, { name: 'flood' }, { name: 'nope' }, { name: 'boom', arguments: '{not json' }] } },
          { reply: { text: 'ok' } },
        ],
      },
      { tools },
    );
    const session = await harness.createSession();
    const events = await collect(session.run('go', { approve: allow }));
    const results = ofType(events, 'tool/result').map((e) => e.data);
    expect(results.map((r) => r.code)).toEqual(['TIMEOUT', 'TOOL_FAILED', 'TOOL_REPORTED_ERROR', 'UNKNOWN_TOOL', 'INVALID_ARGUMENTS']);
    expect(results.every((r) => r.message.content[0].isError)).toBe(true);
    const flood = results[2]!.message.content[0].content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    expect(flood.startsWith('y'.repeat(1000))).toBe(true);
    expect(flood).toContain('9999000 more characters were cut');
    expect(flood).toContain('[exit code: 3]');
    expect(flood.length).toBeLessThan(1200);
    expect(ofType(events, 'turn/end')[0]!.data.reason).toBe('completed');
    assertPaired(session.state.messages);
    // Results are journaled in call order.
    expect(results.map((r) => r.callId)).toEqual(ofType(events, 'tool/call').map((e) => e.data.callId));
  });
});

describe('journal discipline', () => {
  it('every event is on disk, seq contiguous, and the fold of the file equals the live state', async () => {
    const ran: string[] = [];
    harness = await scriptedHarness(
      { replies: [{ when: { step: 1 }, reply: { toolCalls: [{ name: 'peek', arguments: { key: 'a' } }] } }, { reply: { text: 'done' } }] },
      { tools: recordingTools(ran) },
    );
    const session = await harness.createSession();
    const live = await collect(session.run('go', { approve: allow }));
    await session.close();
    const onDisk: AnySessionEvent[] = [];
    for await (const event of readJournal(session.path)) onDisk.push(event);
    expect(onDisk.map((e) => e.seq)).toEqual(onDisk.map((_, i) => i + 1));
    expect(onDisk).toEqual(live);
    const { foldEvents } = await import('../../runtime/index.ts');
    expect(foldEvents(onDisk, undefined).messages).toEqual(session.state.messages);
  });
});
