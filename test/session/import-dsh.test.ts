import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BlockAssembler,
  foldEvents,
  importDshSession,
  openSession,
  recordedCalls,
  stateAt,
  writeImportedSession,
  type AnySessionEvent,
  type DshImport,
  type SessionEvent,
} from '../../runtime/index.ts';
import { initialState, openJournal, reduceEvent } from '../../runtime/internal.ts';
import { dshRoot, dshSessionFiles, historyProblems, tempDataDir } from './support.ts';

const files = dshSessionFiles();
let data: ReturnType<typeof tempDataDir>;
beforeAll(() => {
  data = tempDataDir('session-dsh');
});
afterAll(() => data.cleanup());

/** The raw DeepSeek Harness records, numbered as the README says (packed rows count per delta). */
function rawRecords(path: string): { number: number; record: { type: string; data: any; sourceEventSeqs?: number[] } }[] {
  const out: { number: number; record: { type: string; data: any; sourceEventSeqs?: number[] } }[] = [];
  let number = 0;
  for (const line of readFileSync(path, 'utf8').split('\n').slice(1)) {
    if (line === '') continue;
    const record = JSON.parse(line);
    out.push({ number, record });
    number += record.type.endsWith('-chunks') ? (record.data.texts ?? record.data.args).length : 1;
  }
  return out;
}

describe('import of DeepSeek Harness sessions', () => {
  it('finds the fixtures (including child sessions and compaction-recovery)', () => {
    expect(files.length).toBeGreaterThanOrEqual(27);
    expect(files.map((f) => f.name)).toContain('acp-agent/subagent-spawn-in-process/session.1.jsonl');
    expect(files.map((f) => f.name)).toContain('headless-agent/compaction-recovery/session.jsonl');
  });

  describe.each(files)('$name', ({ path }) => {
    let imported: DshImport;
    beforeAll(async () => {
      imported = await importDshSession(path);
    });

    it('imports: seq from 1, one event per record (our seq = their record number + 1), header importedFrom', () => {
      const { events, header } = imported;
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(header).toMatchObject({ type: 'session', version: 1, importedFrom: { format: 'dsh', path } });
      const raw = rawRecords(path);
      const last = raw.at(-1)!;
      expect(events.length).toBe(last.number + (last.record.type.endsWith('-chunks') ? (last.record.data.texts ?? last.record.data.args).length : 1));
      for (const { number, record } of raw) {
        const ours = events[number]!;
        const expected = record.type.endsWith('-chunks') ? 'assistant/chunk' : null;
        if (expected !== null) expect(ours.type).toBe(expected);
        else if (ours.type.startsWith('dsh/')) {
          expect(ours).toMatchObject({ type: `dsh/${record.type}`, data: record.data, ignorable: true });
        }
      }
      expect(imported.warnings).toEqual([]);
    });

    it('every assistant/message equals our BlockAssembler over the imported chunks of its (turn, step) call', () => {
      expect(imported.assemblerMismatches).toEqual([]);
      const calls = recordedCalls(imported.events);
      const messages = imported.events.filter((e): e is SessionEvent<'assistant/message'> => e.type === 'assistant/message');
      expect(messages.length).toBe(rawRecords(path).filter(({ record }) => record.type === 'assistant/message').length);
      for (const message of messages) {
        const call = calls.find((c) => c.message === message);
        expect(call, `a call for the message at seq ${message.seq}`).toBeDefined();
        expect([call!.turn, call!.step]).toEqual([message.data.turn, message.data.step]);
        const assembler = new BlockAssembler();
        for (const chunk of call!.chunks) assembler.push(chunk);
        if (message.data.interrupted) {
          expect(assembler.interruptedBlocks()).toEqual(message.data.message.content);
        } else {
          const result = assembler.result();
          expect(result.content).toEqual(message.data.message.content);
          expect(result.replayState).toEqual(message.data.message.source.replayState);
          expect(result.finish).toEqual(message.data.finish);
        }
      }
    });

    it('their sourceEventSeqs point at the right events of ours (record n = our seq n + 1)', () => {
      const byRecord = new Map(rawRecords(path).map(({ number, record }) => [number, record]));
      for (const [number, record] of byRecord) {
        if (record.type === 'assistant/message' && record.sourceEventSeqs) {
          for (const s of record.sourceEventSeqs) {
            const ours = imported.events[s]!; // seq s + 1
            expect(ours.type).toBe('assistant/chunk');
            expect(ours.data).toMatchObject({ turn: record.data.turn, step: record.data.step });
          }
        }
        if (record.type === 'tool/result' && record.sourceEventSeqs) {
          const ours = imported.events[record.sourceEventSeqs[0]!]!;
          expect(ours).toMatchObject({ type: 'tool/call', data: { callId: record.data.message.source.callId } });
          expect(imported.events[number]).toMatchObject({ type: 'tool/result', data: { callId: record.data.message.source.callId } });
        }
      }
    });

    it('every tool call has exactly one result, every turn is closed, the surface is a valid history', () => {
      const state = foldEvents(imported.events);
      // None of the recordings ends mid-turn (a recording that does is repaired: see below).
      expect(state.openTurn).toBeUndefined();
      expect(state.pendingToolCalls).toEqual([]);
      expect(historyProblems(imported.events, state.messages)).toEqual([]);
    });

    it('stateAt(seq) at every seq equals the fold of the prefix (and the step-by-step reduction)', () => {
      const events = imported.events;
      let state = initialState('');
      for (const event of events) {
        state = reduceEvent(state, event);
        const at = stateAt(events, event.seq);
        expect(at).toEqual(state);
        expect(at).toEqual(foldEvents(events.slice(0, event.seq)));
      }
    });

    it('import → write → read back gives identical events and an identical fold', async () => {
      const written = await writeImportedSession(path, { dataDir: data.dir, id: `imported-${Math.random().toString(36).slice(2)}` });
      const session = await openSession(written.path, { events: true });
      expect(session.events).toEqual(imported.events);
      expect(session.state).toEqual(foldEvents(imported.events, initialState(session.header.id)));
      expect(session.header.importedFrom).toEqual(imported.header.importedFrom);
      expect(session.interrupted).toBe(false);
    });
  });

  it('maps chunk fields and keeps placeholders as text', async () => {
    const maxTokens = await importDshSession(join(dshRoot, 'acp-agent/max-tokens-continue/session.jsonl'));
    const chunks = maxTokens.events.filter((e): e is SessionEvent<'assistant/chunk'> => e.type === 'assistant/chunk').map((e) => e.data.chunk);
    const delta = chunks.find((c) => c.type === 'tool-call-delta')!;
    expect(delta).toEqual({ type: 'tool-call-delta', index: 1, id: 'call-cut', name: 'bash', arguments: '{"command":"echo demo > ' });
    const finish = chunks.find((c) => c.type === 'finish' && c.finish.kind === 'max-tokens') as Extract<(typeof chunks)[number], { type: 'finish' }>;
    expect(finish.replayState?.blocks).toHaveLength(2); // the finish chunk keeps the full envelope
    const message = maxTokens.events.find((e) => e.type === 'assistant/message') as SessionEvent<'assistant/message'>;
    expect(message.data.message.source.replayState?.blocks).toHaveLength(1); // the message keeps it pruned in lock-step
    expect(message.data.finish).toEqual({ kind: 'max-tokens' });

    const toolTurn = await importDshSession(join(dshRoot, 'acp-agent/tool-call-turn/session.jsonl'));
    const header = toolTurn.events.find((e) => e.type === 'request/header') as SessionEvent<'request/header'>;
    expect(header.data.header.tools).toBe('{{tools}}');
    expect(header.data.header.system).toBe('{{system}}');
    expect(toolTurn.header.cwd).toBe('{{cwd}}');
    const packed = await importDshSession(join(dshRoot, 'acp-agent/packed-chunks/session.jsonl'));
    const toolDeltas = packed.events.flatMap((e) =>
      e.type === 'assistant/chunk' && (e as SessionEvent<'assistant/chunk'>).data.chunk.type === 'tool-call-delta' ? [(e as SessionEvent<'assistant/chunk'>).data.chunk] : [],
    );
    expect(toolDeltas.length).toBeGreaterThan(3);
    expect(toolDeltas.every((c) => c.type === 'tool-call-delta' && typeof c.id === 'string')).toBe(true);
    expect(toolDeltas.filter((c) => c.type === 'tool-call-delta' && c.name !== undefined)).toHaveLength(1);
  });

  it('maps turn ends, tool result codes, approvals and retries onto ours', async () => {
    const cancel = await importDshSession(join(dshRoot, 'acp-agent/cancel-tool-calls/session.jsonl'));
    const end = cancel.events.find((e) => e.type === 'turn/end') as SessionEvent<'turn/end'>;
    expect(end.data).toMatchObject({ turn: 1, reason: 'aborted', dshReason: { kind: 'aborted', reason: { kind: 'user' } } });
    const results = cancel.events.filter((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>[];
    expect(results.map((r) => [r.data.callId, r.data.code])).toEqual([
      ['call_wait', 'ABORTED'],
      ['call_skipped', 'ABORTED_BEFORE_DISPATCH'],
    ]);
    const error = await importDshSession(join(dshRoot, 'acp-agent/error-finish/session.jsonl'));
    expect((error.events.find((e) => e.type === 'turn/end') as SessionEvent<'turn/end'>).data).toMatchObject({ reason: 'error', failure: { code: 'AUTH' } });
    for (const [name, decision] of [
      ['escalation-approved', 'allow'],
      ['escalation-rejected', 'deny'],
    ] as const) {
      const session = await importDshSession(join(dshRoot, `acp-agent/${name}/session.jsonl`));
      const decided = session.events.find((e) => e.type === 'approval/decided') as SessionEvent<'approval/decided'>;
      const call = session.events.find((e) => e.type === 'tool/call') as SessionEvent<'tool/call'>;
      expect(decided.data).toMatchObject({ callId: call.data.callId, decision, decidedBy: 'user', turn: 1, step: 1 });
      expect(session.events.find((e) => (e.type as string) === 'dsh/approval/asked')).toMatchObject({ ignorable: true });
    }
    const retry = await importDshSession(join(dshRoot, 'acp-agent/empty-response-retry/session.jsonl'));
    expect(retry.events.find((e) => e.type === 'llm/retry')!.data).toMatchObject({ turn: 1, step: 1, attempt: 1, maxRetries: 2, delayMs: 1, failure: { code: 'EMPTY_RESPONSE' } });
    expect(recordedCalls(retry.events).map((c) => [c.turn, c.step, c.attempt, c.finish?.kind])).toEqual([
      [1, 1, 0, 'error'],
      [1, 1, 1, 'stop'],
    ]);
  });

  it('headless-agent/compaction-recovery folds to the compacted surface', async () => {
    const path = join(dshRoot, 'headless-agent/compaction-recovery/session.jsonl');
    const imported = await importDshSession(path);
    const replace = imported.events.find((e) => e.type === 'surface/replace') as SessionEvent<'surface/replace'>;
    expect(replace.data).toMatchObject({ start: 0, end: 1 }); // their seqs [4, 4] = our first surface message
    const state = foldEvents(imported.events);
    const texts = state.messages.map((m) => m.content.map((b) => (b.type === 'text' ? b.text : b.type)).join('|'));
    expect(state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(texts[0]).toContain('<compacted-summary>|The request established a durable compaction premise.|</compacted-summary>');
    expect(state.messages[0]!.source).toMatchObject({ kind: 'plugin', plugin: 'compact' });
    expect(texts.slice(1)).toEqual(['tool-call', 'tool-result', 'COMPACTION RECOVERED']);
    expect(texts.join('\n')).not.toContain('Establish a durable compaction premise before continuing');
    const compaction = imported.events.filter((e) => e.type.startsWith('compaction/'));
    expect(compaction.map((e) => e.type)).toEqual(['compaction/start', 'compaction/summary', 'compaction/end']);
    expect(compaction[0]!.data).toMatchObject({ trigger: 'context-window-exceeded', messageCount: 3 });
    expect(compaction[1]!.data).toMatchObject({ summary: 'The request established a durable compaction premise.', usage: { inputTokens: 20, outputTokens: 4 } });
    expect(compaction[2]!.data).toMatchObject({ outcome: 'compacted', keptMessageCount: 3 });
    expect(state.compacting).toBe(false);
    expect(state.usage).toEqual({ inputTokens: 64, outputTokens: 14 });
    // Before the compaction the surface was the original three messages.
    const before = stateAt(imported.events, replace.seq - 1);
    expect(before.messages[0]!.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('Establish a durable compaction premise') });
    // The call made after the recovery saw the compacted surface.
    expect(recordedCalls(imported.events).map((c) => [c.step, c.attempt, c.messageCount, c.finish?.kind])).toEqual([
      [1, 0, 1, 'tool-calls'],
      [2, 0, 3, 'error'],
      [2, 1, 3, 'stop'],
    ]);
  });

  it('a child session keeps its parent link', async () => {
    const parent = await importDshSession(join(dshRoot, 'acp-agent/subagent-spawn-in-process/session.jsonl'));
    const child = await importDshSession(join(dshRoot, 'acp-agent/subagent-spawn-in-process/session.1.jsonl'));
    expect(child.header.importedFrom?.header).toMatchObject({ parentSession: parent.header.importedFrom?.sessionId, origin: 'subagent', delegationDepth: 1 });
    expect(child.events.find((e) => (e.type as string) === 'dsh/subagent/descriptor')).toMatchObject({ ignorable: true, data: { mode: 'one-shot' } });
  });

  it('a recording cut mid-turn imports as such, and opening it closes the turn with synthetic events', async () => {
    const source = join(dshRoot, 'acp-agent/tool-call-turn/session.jsonl');
    const lines = readFileSync(source, 'utf8').split('\n');
    const cut = lines.findIndex((line) => line.includes('"type":"tool/call"')); // keep the assistant message and its tool/call, no result
    const truncated = join(data.dir, 'cut.jsonl');
    writeFileSync(truncated, `${lines.slice(0, cut + 1).join('\n')}\n`);
    const imported = await importDshSession(truncated);
    expect(foldEvents(imported.events).openTurn).toMatchObject({ turn: 1, step: 1, stepOpen: true });
    const written = await writeImportedSession(truncated, { dataDir: data.dir, id: 'cut' });
    const { journal, repairs } = await openJournal(written.path);
    try {
      expect(repairs.syntheticEvents.map((e) => [e.type, (e.data as { code?: string }).code])).toEqual([
        ['tool/result', 'TOOL_NOT_STARTED'],
        ['step/end', undefined],
        ['turn/end', undefined],
      ]);
      const session = await openSession(written.path, { events: true });
      expect(historyProblems(session.events as AnySessionEvent[], session.state.messages)).toEqual([]);
    } finally {
      await journal.close();
    }
  });
});

describe('dsh import: torn last line and format versions (issue 14.4)', () => {
  const source = join(dshRoot, 'acp-agent/tool-call-turn/session.jsonl');

  it('a torn last line keeps the valid prefix, says so, and the rest imports as a cut recording', async () => {
    const text = readFileSync(source, 'utf8');
    const lines = text.split('\n').filter((line) => line !== '');
    const keep = lines.length - 1;
    const last = lines[keep]!;
    const torn = join(data.dir, 'torn.jsonl');
    writeFileSync(torn, `${lines.slice(0, keep).join('\n')}\n${last.slice(0, Math.floor(last.length / 2))}`);
    const whole = await importDshSession(torn);
    const prefixFile = join(data.dir, 'prefix.jsonl');
    writeFileSync(prefixFile, `${lines.slice(0, keep).join('\n')}\n`);
    const prefix = await importDshSession(prefixFile);
    expect(whole.events).toEqual(prefix.events);
    expect(whole.tornTail).toEqual({ line: keep + 1, byteCount: Buffer.byteLength(last.slice(0, Math.floor(last.length / 2))) });
    expect(prefix.tornTail).toBeUndefined();
    expect(whole.warnings.some((w) => w.includes(`line ${keep + 1}: the last line is torn`) && w.includes(`the ${keep} lines before it were imported`))).toBe(true);
    const written = await writeImportedSession(torn, { dataDir: data.dir, id: 'torn' });
    expect(written.eventCount).toBe(prefix.events.length);
    const { journal, repairs } = await openJournal(written.path);
    try {
      expect(repairs.syntheticEvents.at(-1)?.type).toBe('turn/end'); // the cut turn is closed like any interrupted one
      const session = await openSession(written.path, { events: true });
      expect(historyProblems(session.events as AnySessionEvent[], session.state.messages)).toEqual([]);
    } finally {
      await journal.close();
    }
  });

  it('a line that is not JSON anywhere else (or newline-terminated) is still refused, naming file and line', async () => {
    const lines = readFileSync(source, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
    const middle = join(data.dir, 'bad-middle.jsonl');
    writeFileSync(middle, `${[...lines.slice(0, 3), '{"type":"turn/st', ...lines.slice(3)].join('\n')}\n`);
    await expect(importDshSession(middle)).rejects.toMatchObject({ code: 'DSH_IMPORT', message: expect.stringContaining(`${middle}:4: not JSON`) });
    const terminated = join(data.dir, 'bad-terminated.jsonl');
    writeFileSync(terminated, `${[...lines, '{"type":"turn/st'].join('\n')}\n`);
    await expect(importDshSession(terminated)).rejects.toMatchObject({ code: 'DSH_IMPORT', message: expect.stringMatching(/bad-terminated\.jsonl:\d+: not JSON/) });
  });

  it('a newer format version says to upgrade harness-runtime; a Harness journal says to open it instead', async () => {
    const lines = readFileSync(source, 'utf8').split('\n');
    const header = JSON.parse(lines[0]!);
    const newer = join(data.dir, 'newer.jsonl');
    writeFileSync(newer, [JSON.stringify({ ...header, version: 3 }), ...lines.slice(1)].join('\n'));
    await expect(importDshSession(newer)).rejects.toMatchObject({
      code: 'DSH_IMPORT',
      message: expect.stringMatching(/version 3 is newer than this import knows .*reads format version 0.*upgrade harness-runtime to a release that reads version 3/),
    });
    const odd = join(data.dir, 'odd.jsonl');
    writeFileSync(odd, [JSON.stringify({ ...header, version: 'beta' }), ...lines.slice(1)].join('\n'));
    await expect(importDshSession(odd)).rejects.toMatchObject({ message: expect.stringContaining('"beta" is not a DeepSeek Harness format version') });
    const ours = await writeImportedSession(source, { dataDir: data.dir, id: 'ours-not-dsh' });
    await expect(importDshSession(ours.path)).rejects.toMatchObject({ message: expect.stringContaining('this is a Harness journal (version 1, createdAtMs)') });
  });
});
