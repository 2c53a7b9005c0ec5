/**
 * plugins/compaction (issue #7, acceptance "compaction"), over the scripted model with the script
 * `scripts/overflow.ts` (each prompt: a `fetch` tool call, then `done: <prompt>`; summaries on
 * `purpose: 'compaction'`; the system prompt picks a bad summary; `overflow` prompts fail with
 * CONTEXT_WINDOW_EXCEEDED until the history holds a summary).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createUserMessage, foldEvents, importDshSession, readJournal, stateAt, writeImportedSession, type AnySessionEvent, type Harness, type Message } from '../../runtime/index.ts';
import { createJournal } from '../../runtime/internal.ts';
import { cutIndex } from '../../plugins/compaction/index.ts';
import { dshRoot } from '../session/support.ts';
import { assertPaired, bulkyTool, collect, ofType, plugin, recordRequests, runTurn, scriptedPluginHarness, type PluginEntry } from './support.ts';

const SCRIPT = join(import.meta.dirname, 'scripts/overflow.ts');

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

async function start(options: { contextWindow?: number; compaction?: Record<string, unknown>; meter?: boolean; system?: string; dataDir?: string } = {}) {
  const ran: string[] = [];
  const plugins: PluginEntry[] = [
    ...(options.meter === false ? [] : [{ module: plugin('token-meter') }]),
    { module: plugin('compaction'), config: { reserveTokens: 600, keepTurns: 2, ...options.compaction } },
  ];
  const h = await scriptedPluginHarness(SCRIPT, {
    contextWindow: options.contextWindow ?? 1000,
    tools: [bulkyTool(ran)],
    plugins,
    ...(options.system ? { system: options.system } : {}),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  harness = h;
  const requests = recordRequests(h);
  return { harness: h, ran, requests, agentRequests: () => requests.filter((r) => r.purpose === 'agent'), summaryRequests: () => requests.filter((r) => r.purpose === 'compaction') };
}

const textOf = (message: Message) => message.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('');
const isPrompt = (message: Message) => message.role === 'user' && message.source.kind === 'user';
const between = (events: readonly AnySessionEvent[], fromSeq: number, toSeq: number) => events.filter((e) => e.seq >= fromSeq && e.seq <= toSeq);

describe('compaction of a long scripted session', () => {
  it('crosses the threshold, compacts at a turn boundary, and continues; the next request is the summary plus the kept turns', async () => {
    const { harness: h, ran, requests, agentRequests, summaryRequests } = await start();
    const session = await h.createSession();
    const events: AnySessionEvent[] = [];
    const pressure: number[] = [];
    h.ctx.on('usage/updated', (e) => void pressure.push(e.usage.contextTokens));
    for (let i = 1; i <= 8; i++) {
      const { events: turn, end } = await runTurn(session, `task ${i}`);
      expect(end.data.reason).toBe('completed');
      events.push(...turn);
    }
    expect(ran).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((i) => `task-${i}`));

    const starts = ofType(events, 'compaction/start');
    expect(starts.length).toBeGreaterThanOrEqual(2); // it keeps compacting as the session grows
    const first = starts[0]!;
    expect(first.data.trigger).toBe('threshold');
    // It did not compact in the first turns: only once the pressure crossed 1000 − 600.
    const turnOf = (seq: number) =>
      ofType(events, 'turn/start')
        .filter((e) => e.seq < seq)
        .at(-1)!.data.turn;
    expect(turnOf(first.seq)).toBeGreaterThanOrEqual(3);

    // Journal order: start, summary, surface/replace, end — nothing in between.
    const end = ofType(events, 'compaction/end').find((e) => e.seq > first.seq)!;
    expect(between(events, first.seq, end.seq).map((e) => e.type)).toEqual(['compaction/start', 'compaction/summary', 'surface/replace', 'compaction/end']);
    expect(end.data).toMatchObject({ outcome: 'compacted' });

    // The cut: before the prompt of the second-to-last turn (keepTurns 2).
    const surfaceBefore = stateAt(events, first.seq).messages;
    expect(first.data.messageCount).toBe(surfaceBefore.length);
    const prompts = surfaceBefore.flatMap((m, i) => (isPrompt(m) ? [i] : []));
    const cut = prompts.at(-2)!;
    const replace = ofType(events, 'surface/replace')[0]!;
    expect(replace.data.start).toBe(0);
    expect(replace.data.end).toBe(cut);
    expect(replace.data.messages).toHaveLength(1);
    const summaryMessage = replace.data.messages[0]!;
    expect(summaryMessage).toMatchObject({ role: 'user', source: { kind: 'plugin', plugin: 'compaction' } });
    const summary = ofType(events, 'compaction/summary')[0]!.data;
    expect(summary).toMatchObject({ provider: 'scripted', model: 'test' });
    expect(summary.usage?.outputTokens).toBeGreaterThan(0);
    expect(textOf(summaryMessage)).toContain(summary.summary);
    expect(summary.summary).toBe(`Summary of: ${surfaceBefore.slice(0, cut).filter(isPrompt).map(textOf).join(' | ')}`);
    expect(end.data.keptMessageCount).toBe(surfaceBefore.length - cut);

    // The next model request: exactly the summary message plus the kept turns, every call paired.
    const firstSummaryCall = requests.findIndex((r) => r.purpose === 'compaction');
    const next = requests.slice(firstSummaryCall + 1).find((r) => r.purpose === 'agent')!;
    expect(next.messages).toEqual([summaryMessage, ...surfaceBefore.slice(cut)]);
    expect(next.messages.filter(isPrompt).length).toBe(2);
    for (const request of agentRequests()) assertPaired(request.messages);
    assertPaired(session.state.messages);

    // The summary call: through ctx.llm.stream (this llm/stream middleware saw it), purpose
    // 'compaction', the older messages plus the instruction, and the session's own tool definitions.
    const summaryCall = summaryRequests()[0]!;
    expect(summaryCall.messages.slice(0, -1)).toEqual(surfaceBefore.slice(0, cut));
    expect(summaryCall.messages.at(-1)).toMatchObject({ role: 'user', source: { kind: 'user' } });
    expect(textOf(summaryCall.messages.at(-1)!)).toContain('Summarise the conversation above');
    expect(summaryCall.tools).toEqual(agentRequests()[0]!.tools);
    expect(summaryCall.tools!.map((t) => t.name)).toEqual(['fetch']);
    expect(summaryCall.sessionId).toBe(session.id);
    expect([summaryCall.provider, summaryCall.model]).toEqual(['scripted', 'test']);
    expect(summaryRequests()).toHaveLength(starts.length);

    // The pressure moved down at the surface/replace.
    const meter = h.ctx.tokenMeter!.session(session.id);
    expect(meter.requests.filter((r) => r.purpose === 'compaction')).toHaveLength(starts.length);
    expect(Math.max(...pressure)).toBeLessThan(1000); // compaction kept it inside the window
    // The session is still whole after reading it back.
    await session.close();
    const journal: AnySessionEvent[] = [];
    for await (const event of readJournal(session.path)) journal.push(event);
    expect(foldEvents(journal).messages).toEqual(session.state.messages);
  });

  it("the meter's pressure falls at the surface/replace", async () => {
    const { harness: h } = await start();
    const session = await h.createSession();
    const values: number[] = [];
    h.ctx.on('usage/updated', (e) => void values.push(e.usage.contextTokens));
    let atReplace = -1;
    // Registered after the meter: runs once the meter has emitted for the same event.
    h.ctx.on('session/event', ({ event }) => {
      if (event.type === 'surface/replace' && atReplace < 0) atReplace = values.length;
    });
    for (let i = 1; i <= 5 && atReplace < 0; i++) await runTurn(session, `task ${i}`);
    expect(atReplace).toBeGreaterThan(1);
    const before = values[atReplace - 2]!;
    const after = values[atReplace - 1]!;
    expect(before).toBeGreaterThanOrEqual(1000 - 600); // it was over the threshold
    expect(after).toBeLessThan(before - 100);
    expect(after).toBeLessThan(1000 - 600); // and is under it now
  });

  it('an empty summary is a failed attempt: the context is left exactly as it was', async () => {
    const { harness: h, agentRequests } = await start({ system: 'Test agent. [summary:empty]' });
    const session = await h.createSession();
    const events: AnySessionEvent[] = [];
    for (let i = 1; i <= 5; i++) events.push(...(await runTurn(session, `task ${i}`)).events);
    expect(ofType(events, 'turn/end').map((e) => e.data.reason)).toEqual(Array(5).fill('completed'));
    const starts = ofType(events, 'compaction/start');
    expect(starts.length).toBeGreaterThanOrEqual(1);
    expect(ofType(events, 'compaction/summary')).toHaveLength(0);
    expect(ofType(events, 'surface/replace')).toHaveLength(0);
    const ends = ofType(events, 'compaction/end');
    expect(ends).toHaveLength(starts.length);
    for (const end of ends) expect(end.data).toMatchObject({ outcome: 'failed', failure: { code: 'EMPTY_RESPONSE' } });
    // A failed attempt is not repeated at every step of the same turn.
    const turns = starts.map(
      (s) =>
        ofType(events, 'turn/start')
          .filter((t) => t.seq < s.seq)
          .at(-1)!.data.turn,
    );
    expect(new Set(turns).size).toBe(turns.length);
    // Surface equal before and after; the next request carries the untouched history.
    const first = starts[0]!;
    const end = ends[0]!;
    expect(stateAt(events, end.seq).messages).toEqual(stateAt(events, first.seq - 1).messages);
    const afterFailure = agentRequests().find((r) => r.messages.length >= stateAt(events, end.seq).messages.length)!;
    expect(afterFailure.messages).toEqual(stateAt(events, end.seq).messages);
    expect(session.state.messages.filter(isPrompt)).toHaveLength(5);
    expect(session.state.compacting).toBe(false);
  });

  it('a summary that calls a tool is a failed attempt: no tool runs, the context stays', async () => {
    const { harness: h, ran } = await start({ system: 'Test agent. [summary:tool]' });
    const session = await h.createSession();
    const events: AnySessionEvent[] = [];
    for (let i = 1; i <= 5; i++) events.push(...(await runTurn(session, `task ${i}`)).events);
    const ends = ofType(events, 'compaction/end');
    expect(ends.length).toBeGreaterThanOrEqual(1);
    for (const end of ends) expect(end.data).toMatchObject({ outcome: 'failed', failure: { code: 'MALFORMED_RESPONSE' } });
    expect(ofType(events, 'surface/replace')).toHaveLength(0);
    expect(ofType(events, 'compaction/summary')).toHaveLength(0);
    expect(ran).not.toContain('summary');
    expect(ofType(events, 'tool/call').map((e) => e.data.callId)).not.toContain('call-summary');
    expect(stateAt(events, ends[0]!.seq).messages).toEqual(stateAt(events, ofType(events, 'compaction/start')[0]!.seq - 1).messages);
  });

  it('CONTEXT_WINDOW_EXCEEDED from the model triggers a compaction and a retry of the call', async () => {
    // A large window: the threshold never fires, only the overflow does.
    const { harness: h, agentRequests, summaryRequests } = await start({ contextWindow: 1_000_000, compaction: { keepTurns: 1 } });
    const session = await h.createSession();
    for (let i = 1; i <= 3; i++) await runTurn(session, `task ${i}`);
    const surfaceBefore = session.state.messages;
    const { events, end } = await runTurn(session, 'overflow now');
    expect(end.data.reason).toBe('completed');
    const finishes = ofType(events, 'assistant/chunk')
      .filter((e) => e.data.chunk.type === 'finish')
      .map((e) => (e.data.chunk as { finish: { kind: string; failure?: { code: string } } }).finish);
    expect(finishes.map((f) => f.failure?.code ?? f.kind)).toEqual(['CONTEXT_WINDOW_EXCEEDED', 'tool-calls', 'stop']);
    const sequence = events.filter((e) => e.type.startsWith('compaction/') || e.type === 'surface/replace' || e.type === 'assistant/message' || e.type === 'llm/retry').map((e) => e.type);
    expect(sequence).toEqual(['compaction/start', 'compaction/summary', 'surface/replace', 'compaction/end', 'assistant/message', 'assistant/message']);
    expect(ofType(events, 'compaction/start')[0]!.data).toMatchObject({ trigger: 'context-window-exceeded' });
    expect(ofType(events, 'step/start').map((e) => e.data.step)).toEqual([1, 2]); // retried inside step 1
    // The summary covers everything before the current prompt; the retried call sees summary + the current turn.
    const cut = surfaceBefore.length; // the current prompt is the only kept turn
    const summaryCall = summaryRequests()[0]!;
    expect(summaryCall.messages.slice(0, -1)).toEqual(surfaceBefore);
    expect(summaryCall.tools).toEqual(agentRequests()[0]!.tools);
    const failedCall = agentRequests().at(-3)!;
    const retried = agentRequests().at(-2)!;
    expect(failedCall.messages.slice(0, cut)).toEqual(surfaceBefore);
    expect(retried.messages).toHaveLength(2);
    expect(retried.messages[0]).toMatchObject({ source: { kind: 'plugin', plugin: 'compaction' } });
    expect(textOf(retried.messages[0]!)).toContain('Summary of: task 1 | task 2 | task 3');
    expect(retried.messages[1]).toEqual(failedCall.messages.at(-1));
    assertPaired(session.state.messages);
  });

  it('an overflow that compaction cannot fix ends the turn with the error, visible (compacted once per step)', async () => {
    const { harness: h } = await start({ contextWindow: 1_000_000, compaction: { keepTurns: 1 } });
    const session = await h.createSession();
    // First turn: nothing older to cut.
    const { events, end } = await runTurn(session, 'overflow at once');
    expect(end.data).toMatchObject({ reason: 'error', failure: { code: 'CONTEXT_WINDOW_EXCEEDED' } });
    expect(ofType(events, 'compaction/start')).toHaveLength(0);
  });

  it('without the token meter the threshold uses an estimate of the surface', async () => {
    const { harness: h } = await start({ meter: false });
    const session = await h.createSession();
    const events: AnySessionEvent[] = [];
    for (let i = 1; i <= 8; i++) events.push(...(await runTurn(session, `task ${i}`)).events);
    expect(ofType(events, 'compaction/end').filter((e) => e.data.outcome === 'compacted').length).toBeGreaterThanOrEqual(1);
    assertPaired(session.state.messages);
  });

  it('a resumed session over the threshold is compacted before its first request (the meter joined late)', async () => {
    const first = await start({ compaction: { auto: false } });
    const session = await first.harness.createSession();
    for (let i = 1; i <= 5; i++) await runTurn(session, `task ${i}`);
    const dataDir = first.harness.dataDir;
    await first.harness.dispose();
    harness = undefined;
    const second = await start({ dataDir });
    const { session: resumed } = await second.harness.openSession(session.id);
    const { events, end } = await runTurn(resumed, 'task 6');
    expect(end.data.reason).toBe('completed');
    const types = events.map((e) => e.type);
    // step/start, then the compaction, then the first model call of the resumed session.
    expect(types.indexOf('compaction/start')).toBeGreaterThan(types.indexOf('step/start'));
    expect(types.indexOf('compaction/end')).toBeLessThan(types.indexOf('assistant/chunk'));
    expect(ofType(events, 'compaction/end')[0]!.data.outcome).toBe('compacted');
    expect(second.agentRequests()[0]!.messages[0]).toMatchObject({ source: { kind: 'plugin', plugin: 'compaction' } });
  });

  it("ctx.compaction.compact() compacts on request with the session's tools and system", async () => {
    const { harness: h, summaryRequests, agentRequests } = await start({ contextWindow: 1_000_000, system: 'Be brief.' });
    const session = await h.createSession();
    for (let i = 1; i <= 3; i++) await runTurn(session, `task ${i}`);
    const prepared = await h.llm.prepareCall({ provider: 'scripted', model: 'test' });
    const result = await h.ctx.compaction!.compact(session.session, prepared);
    expect(result).toMatchObject({ outcome: 'compacted', messageCount: 1 + 8 });
    expect(summaryRequests()[0]!.tools).toEqual(agentRequests()[0]!.tools);
    expect(summaryRequests()[0]!.system).toBe('Be brief.');
    const { end } = await runTurn(session, 'task 4');
    expect(end.data.reason).toBe('completed');
    expect(agentRequests().at(-1)!.messages[0]).toMatchObject({ source: { kind: 'plugin', plugin: 'compaction' } });
  });
  it('two compactions of one session at once: the second is skipped, the surface stays valid', async () => {
    const { harness: h, summaryRequests } = await start({ contextWindow: 1_000_000 });
    const session = await h.createSession();
    for (let i = 1; i <= 3; i++) await runTurn(session, `task ${i}`);
    const prepared = await h.llm.prepareCall({ provider: 'scripted', model: 'test' });
    const results = await Promise.all([h.ctx.compaction!.compact(session.session, prepared), h.ctx.compaction!.compact(session.session, prepared)]);
    expect(results.map((r) => r.outcome)).toEqual(['compacted', 'skipped']);
    expect(summaryRequests()).toHaveLength(1);
    expect(session.state.messages).toHaveLength(1 + 8);
    assertPaired(session.state.messages);
    const { end } = await runTurn(session, 'task 4');
    expect(end.data.reason).toBe('completed');
  });
});

describe('cutIndex', () => {
  const prompt = (text: string) => createUserMessage(text);
  const surface = [prompt('a'), prompt('b'), prompt('c')];
  it('cuts before the prompt of the oldest kept turn; nothing when there is nothing older', () => {
    expect(cutIndex(surface, 1)).toBe(2);
    expect(cutIndex(surface, 2)).toBe(1);
    expect(cutIndex(surface, 3)).toBe(-1);
    expect(cutIndex([], 1)).toBe(-1);
  });
  it('keepTurns 0 summarises the whole surface', () => {
    expect(cutIndex(surface, 0)).toBe(3);
    expect(cutIndex([], 0)).toBe(-1);
  });
});

describe('compaction and journals', () => {
  it('headless-agent/compaction-recovery (dsh), written as a journal, opens with the compacted surface and a run continues from it', async () => {
    const { harness: h, agentRequests } = await start({ contextWindow: 1_000_000 });
    const source = join(dshRoot, 'headless-agent/compaction-recovery/session.jsonl');
    const imported = await importDshSession(source);
    const written = await writeImportedSession(source, { dataDir: h.dataDir, id: 'compaction-recovery' });
    // The recording's workspace is a placeholder ({{cwd}}): give the resumed session a real one.
    const { session, repairs } = await h.openSession(written.path, { cwd: h.dataDir });
    expect(repairs.syntheticEvents).toEqual([]);
    const compacted = foldEvents(imported.events).messages;
    expect(session.state.messages).toEqual(compacted);
    expect(session.state.compacting).toBe(false);
    expect(textOf(session.state.messages[0]!)).toContain('<compacted-summary>The request established a durable compaction premise.</compacted-summary>');
    const { end } = await collect(session.run('task after recovery', { approve: () => 'allow', provider: 'scripted', model: 'test' })).then((events) => ({ end: ofType(events, 'turn/end')[0]! }));
    expect(end.data.reason).toBe('completed');
    const first = agentRequests()[0]!;
    expect(first.messages.slice(0, compacted.length)).toEqual(compacted);
    expect(first.messages.map(textOf).join('\n')).not.toContain('Establish a durable compaction premise before continuing');
    assertPaired(session.state.messages);
  });

  it('a compaction cut short by a crash is closed as failed when harness.openSession opens the session', async () => {
    const { harness: h } = await start();
    const session = await h.createSession();
    const events: AnySessionEvent[] = [];
    for (let i = 1; i <= 6 && ofType(events, 'compaction/start').length === 0; i++) events.push(...(await runTurn(session, `task ${i}`)).events);
    const started = ofType(events, 'compaction/start')[0]!;
    await session.close();
    // What a crash during the summary call leaves: the journal ends at compaction/start.
    const lines = readFileSync(session.path, 'utf8').split('\n');
    const at = lines.findIndex((line) => line.includes('"type":"compaction/start"'));
    writeFileSync(session.path, `${lines.slice(0, at + 1).join('\n')}\n`);
    const { session: reopened, repairs } = await h.openSession(session.id);
    expect(repairs.syntheticEvents.map((e) => e.type)).toEqual(['compaction/end', 'step/end', 'turn/end']);
    expect(repairs.syntheticEvents[0]!.data).toMatchObject({ outcome: 'failed', failure: { code: 'INTERRUPTED' } });
    expect(repairs.syntheticEvents[2]!.data).toMatchObject({ reason: 'interrupted' });
    expect(reopened.state.compacting).toBe(false);
    // The original context stays, and the session goes on (and may compact again).
    expect(reopened.state.messages).toEqual(stateAt(events, started.seq).messages);
    const next = await collect(reopened.run('task after the crash', { approve: () => 'allow' }));
    expect(ofType(next, 'turn/end')[0]!.data.reason).toBe('completed');
    assertPaired(reopened.state.messages);
  });

  it('a journal with a compaction/start and no end, made with createJournal, is repaired by openSession', async () => {
    const { harness: h } = await start();
    const journal = await createJournal({ dataDir: h.dataDir, id: 'half-compacted' });
    await journal.append('turn/start', { turn: 1 });
    await journal.append('user/message', { turn: 1, message: createUserMessage('hello') });
    await journal.append('step/start', { turn: 1, step: 1 });
    await journal.append('compaction/start', { trigger: 'threshold', messageCount: 1 });
    await journal.close();
    const { session, repairs } = await h.openSession('half-compacted');
    expect(repairs.syntheticEvents.map((e) => [e.type, (e.data as { outcome?: string }).outcome])).toEqual([
      ['compaction/end', 'failed'],
      ['step/end', undefined],
      ['turn/end', undefined],
    ]);
    expect(session.state.compacting).toBe(false);
    expect(session.state.messages.map(textOf)).toEqual(['hello']);
  });
});
