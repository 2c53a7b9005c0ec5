import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createAssistantMessage,
  createToolResultMessage,
  createUserMessage,
  forkSession,
  HarnessError,
  listSessions,
  openSession,
  readJournal,
  readJournalHeader,
  registerEventType,
  stateAt,
  type AnySessionEvent,
  type Diagnostic,
  type SessionJournal,
} from '../../runtime/index.ts';
import { createJournal, HookBus, openJournal, resolveSessionPath } from '../../runtime/internal.ts';
import { historyProblems, tempDataDir } from './support.ts';

let data: ReturnType<typeof tempDataDir>;
const open: SessionJournal[] = [];
beforeEach(() => {
  data = tempDataDir('session-journal');
});
afterEach(async () => {
  for (const journal of open.splice(0)) await journal.close().catch(() => undefined);
  data.cleanup();
});

async function newJournal(options: Parameters<typeof createJournal>[0] = {}): Promise<SessionJournal> {
  const journal = await createJournal({ dataDir: data.dir, ...options });
  open.push(journal);
  return journal;
}

async function readAll(path: string, options?: Parameters<typeof readJournal>[1]): Promise<AnySessionEvent[]> {
  const events: AnySessionEvent[] = [];
  for await (const event of readJournal(path, options)) events.push(event);
  return events;
}

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (!HarnessError.is(error)) throw error;
    return { code: error.code, message: error.message };
  }
  throw new Error('expected a rejection');
}

/** A complete turn: user message, one step with a tool call, a final step. */
async function completeTurn(journal: SessionJournal, turn: number, text = 'hi'): Promise<void> {
  await journal.append('turn/start', { turn });
  await journal.append('user/message', { turn, message: createUserMessage(text) });
  await journal.append('step/start', { turn, step: 1 });
  if (journal.state.header === undefined) await journal.append('request/header', { header: { config: { provider: 'p', model: 'm' }, tools: [] }, reason: 'initial' });
  await journal.checkpoint();
  const callId = `call-${turn}`;
  await journal.append('assistant/chunk', { turn, step: 1, chunk: { type: 'tool-call-delta', index: 0, id: callId, name: 'read', arguments: '{"path":"a"}' } });
  await journal.append('assistant/chunk', { turn, step: 1, chunk: { type: 'finish', finish: { kind: 'tool-calls' } } });
  const reply = createAssistantMessage({ provider: 'p', model: 'm', content: [{ type: 'tool-call', id: callId, name: 'read', arguments: '{"path":"a"}' }] });
  await journal.append('assistant/message', { turn, step: 1, message: reply, finish: { kind: 'tool-calls' }, usage: { inputTokens: 10, outputTokens: 3 } });
  await journal.append('tool/call', { turn, step: 1, callId, name: 'read', arguments: '{"path":"a"}' });
  await journal.append('approval/decided', { turn, step: 1, callId, decision: 'allow', decidedBy: 'test' });
  await journal.checkpoint();
  await journal.append('tool/start', { turn, step: 1, callId });
  await journal.append('tool/result', { turn, step: 1, callId, message: createToolResultMessage({ callId, content: 'A' }) });
  await journal.append('step/end', { turn, step: 1 });
  await journal.append('step/start', { turn, step: 2 });
  await journal.append('assistant/chunk', { turn, step: 2, chunk: { type: 'text-delta', index: 0, text: 'done' } });
  await journal.append('assistant/chunk', { turn, step: 2, chunk: { type: 'finish', finish: { kind: 'stop' } } });
  await journal.append('assistant/message', {
    turn,
    step: 2,
    message: createAssistantMessage({ provider: 'p', model: 'm', content: 'done' }),
    finish: { kind: 'stop' },
    usage: { inputTokens: 4, outputTokens: 1 },
  });
  await journal.append('step/end', { turn, step: 2 });
  await journal.append('turn/end', { turn, reason: 'completed' });
  await journal.checkpoint();
}

describe('the JSONL store', () => {
  it('writes the header, then one event per line in the fixed key order; reads back equal', async () => {
    const journal = await newJournal({ id: 'abc', cwd: '/work', now: () => 1000 });
    const first = await journal.append('turn/start', { turn: 1 });
    const output = await journal.append('tool/output', { turn: 1, step: 1, callId: 'c', text: 'x' });
    const marked = await journal.append('session/title', { title: 'T' }, { ignorable: true });
    await journal.close();
    expect(journal.path).toBe(join(data.dir, 'sessions', 'abc.jsonl'));
    const lines = readFileSync(journal.path, 'utf8').split('\n');
    expect(lines).toEqual([
      '{"type":"session","version":1,"id":"abc","createdAtMs":1000,"cwd":"/work"}',
      '{"seq":1,"type":"turn/start","atMs":1000,"data":{"turn":1}}',
      '{"seq":2,"type":"tool/output","atMs":1000,"data":{"turn":1,"step":1,"callId":"c","text":"x"},"ignorable":true}',
      '{"seq":3,"type":"session/title","atMs":1000,"data":{"title":"T"},"ignorable":true}',
      '',
    ]);
    expect(await readAll(journal.path)).toEqual([first, output, marked]);
    expect(Object.isFrozen(first) && Object.isFrozen(first.data)).toBe(true);
    expect(existsSync(`${journal.path}.lock`)).toBe(false);
  });

  it('append queues the line (no synchronous write); a background flush writes it; checkpoint writes and syncs', async () => {
    const journal = await newJournal();
    journal.append('turn/start', { turn: 1 });
    const headerOnly = readFileSync(journal.path, 'utf8');
    expect(headerOnly.split('\n')).toHaveLength(2);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(readFileSync(journal.path, 'utf8').split('\n')).toHaveLength(3);
    for (let i = 0; i < 1000; i++) journal.append('tool/output', { turn: 1, step: 1, callId: 'c', text: 'x'.repeat(100) });
    await journal.checkpoint();
    expect(readFileSync(journal.path, 'utf8').split('\n')).toHaveLength(1003);
    expect(journal.lastSeq).toBe(1001);
  });

  it('folds as it appends; the state after reopening is the same fold', async () => {
    const journal = await newJournal();
    await completeTurn(journal, 1);
    await completeTurn(journal, 2);
    const live = journal.state;
    expect(live.messages).toHaveLength(8);
    expect(live.usage).toEqual({ inputTokens: 28, outputTokens: 8 });
    expect(live.turnCount).toBe(2);
    await journal.close();
    const session = await openSession(journal.path, { events: true });
    expect(session.state).toEqual(live);
    expect(session.interrupted).toBe(false);
    expect(session.lastSeq).toBe(session.events!.length);
    expect(historyProblems(session.events!, session.state.messages)).toEqual([]);
    const reopened = await openJournal(journal.id, { dataDir: data.dir });
    open.push(reopened.journal);
    expect(reopened.repairs).toEqual({ syntheticEvents: [] });
    expect(reopened.journal.state).toEqual(live);
    expect(reopened.journal.lastSeq).toBe(session.lastSeq);
  });

  it('rejects data that is not lossless JSON, naming the path, without using a seq', async () => {
    const journal = await newJournal();
    const bad = {
      turn: 1,
      message: {
        ...createUserMessage('x'),
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
          { type: 'text', text: undefined },
        ],
      },
    };
    expect(() => journal.append('user/message', bad as never)).toThrow(/data\.message\.content\[2\]\.text/);
    expect(() => journal.append('turn/start', { turn: Number.NaN })).toThrow(expect.objectContaining({ code: 'INVALID_EVENT_DATA' }));
    expect(() => journal.append('acme/thing' as never, {} as never)).toThrow(expect.objectContaining({ code: 'UNKNOWN_EVENT_TYPE' }));
    const kept = await journal.append('acme/thing' as never, { a: 1 } as never, { ignorable: true });
    expect(kept.seq).toBe(1);
    await journal.close();
    expect(() => journal.append('turn/start', { turn: 1 })).toThrow(expect.objectContaining({ code: 'JOURNAL_CLOSED' }));
  });

  it('delivers every event on the session/event sink; append returns a promise only when a sink is async', async () => {
    const bus = new HookBus();
    const seen: string[] = [];
    bus.declare('session/event', 'sink');
    bus.add('session/event', ({ sessionId, event }: { sessionId: string; event: AnySessionEvent }) => void seen.push(`${sessionId}:${event.seq}:${event.type}`));
    const journal = await newJournal({ id: 's1', bus });
    const sync = journal.append('turn/start', { turn: 1 });
    expect(sync).not.toBeInstanceOf(Promise);
    let release!: () => void;
    const dispose = bus.add('session/event', () => new Promise<void>((resolve) => (release = resolve)));
    const pending = journal.append('step/start', { turn: 1, step: 1 });
    expect(pending).toBeInstanceOf(Promise);
    release();
    expect((await pending).seq).toBe(2);
    dispose();
    expect(seen).toEqual(['s1:1:turn/start', 's1:2:step/start']);
  });

  it('emits session/written once per written batch, with its events, when the file holds them', async () => {
    const bus = new HookBus();
    bus.declare('session/written', 'emit');
    const batches: { seqs: number[]; lastSeq: number; inFile: number[] }[] = [];
    let path = '';
    bus.add('session/written', ({ sessionId, events, lastSeq }: { sessionId: string; events: readonly AnySessionEvent[]; lastSeq: number }) => {
      expect(sessionId).toBe('w1');
      const inFile = readFileSync(path, 'utf8')
        .split('\n')
        .slice(1)
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { seq: number }).seq);
      batches.push({ seqs: events.map((e) => e.seq), lastSeq, inFile });
    });
    const journal = await newJournal({ id: 'w1', bus });
    path = journal.path;
    journal.append('turn/start', { turn: 1 });
    journal.append('step/start', { turn: 1, step: 1 });
    expect(batches).toEqual([]); // appended, not written yet
    await journal.checkpoint();
    journal.append('step/end', { turn: 1, step: 1 });
    journal.append('turn/end', { turn: 1, reason: 'completed' });
    await journal.close();
    expect(batches).toEqual([
      { seqs: [1, 2], lastSeq: 2, inFile: [1, 2] },
      { seqs: [3, 4], lastSeq: 4, inFile: [1, 2, 3, 4] },
    ]);
    // The very objects appended (frozen), not copies.
    const seen: AnySessionEvent[] = [];
    const again = await openJournal('w1', { dataDir: data.dir, bus });
    const dispose = bus.add('session/written', ({ events }: { events: readonly AnySessionEvent[] }) => void seen.push(...events));
    const appended = again.journal.append('session/title', { title: 'written' }) as AnySessionEvent;
    await again.journal.close();
    dispose();
    expect(seen).toEqual([appended]);
    expect(seen[0]).toBe(appended);
  });

  it('resolves ids and paths', () => {
    expect(resolveSessionPath('abc', '/data')).toBe('/data/sessions/abc.jsonl');
    expect(resolveSessionPath('/x/y.jsonl', '/data')).toBe('/x/y.jsonl');
    expect(() => resolveSessionPath('', '/data')).toThrow(expect.objectContaining({ code: 'INVALID_SESSION_ID' }));
  });
});

describe('one writer per session', () => {
  it('a second writer gets JOURNAL_LOCKED (same process and another live process); the lock is released on close', async () => {
    const journal = await newJournal({ id: 'locked' });
    await journal.append('turn/start', { turn: 1 });
    const second = await codeOf(openJournal('locked', { dataDir: data.dir }));
    expect(second.code).toBe('JOURNAL_LOCKED');
    await journal.close();
    expect(existsSync(`${journal.path}.lock`)).toBe(false);

    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
    try {
      writeFileSync(`${journal.path}.lock`, `${sleeper.pid}\n`);
      const before = readFileSync(journal.path);
      const other = await codeOf(openJournal('locked', { dataDir: data.dir }));
      expect(other.code).toBe('JOURNAL_LOCKED');
      expect(other.message).toContain(`pid ${sleeper.pid}`);
      expect(readFileSync(journal.path).equals(before)).toBe(true);
      expect(readFileSync(`${journal.path}.lock`, 'utf8')).toBe(`${sleeper.pid}\n`);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  it('a stale lock of a dead pid is taken over, with a diagnostic', async () => {
    const journal = await newJournal({ id: 'stale' });
    await completeTurn(journal, 1);
    await journal.close();
    const dead = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    await new Promise((resolve) => dead.on('exit', resolve));
    writeFileSync(`${journal.path}.lock`, `${dead.pid}\n`);
    const bus = new HookBus();
    const diagnostics: Diagnostic[] = [];
    bus.add('kernel/diagnostic', (d: Diagnostic) => void diagnostics.push(d));
    const reopened = await openJournal('stale', { dataDir: data.dir, bus });
    open.push(reopened.journal);
    expect(reopened.repairs.staleLock).toEqual({ pid: dead.pid });
    expect(diagnostics.map((d) => d.code)).toContain('JOURNAL_STALE_LOCK');
    expect(readFileSync(`${journal.path}.lock`, 'utf8')).toMatch(new RegExp(`^${process.pid} [0-9a-f]{16}\\n$`));
  });
});

describe('errors leave the file byte-identical', () => {
  async function expectUntouched(path: string, code: string, pattern: RegExp): Promise<void> {
    const before = readFileSync(path);
    const dir = readdirSync(join(path, '..')).sort();
    const writable = await codeOf(openJournal(path));
    expect(writable.code).toBe(code);
    expect(writable.message).toMatch(pattern);
    const readOnly = await codeOf(openSession(path));
    expect(readOnly.code).toBe(code);
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(join(path, '..')).sort()).toEqual(dir); // no sidecar, no lock left behind
  }

  it('a header that is not JSON → JOURNAL_HEADER naming file and line 1', async () => {
    const journal = await newJournal({ id: 'badheader' });
    await completeTurn(journal, 1);
    await journal.close();
    const text = readFileSync(journal.path, 'utf8');
    writeFileSync(journal.path, `{"type":"session","version":1,"id":${text.slice(text.indexOf('\n'))}`);
    await expectUntouched(journal.path, 'JOURNAL_HEADER', /badheader\.jsonl:1: the header line is not JSON/);
  });

  it('a header replaced by another JSON object → JOURNAL_HEADER that allows for a damaged header', async () => {
    const journal = await newJournal({ id: 'emptyheader' });
    await completeTurn(journal, 1);
    await journal.close();
    const text = readFileSync(journal.path, 'utf8');
    writeFileSync(journal.path, `{}${text.slice(text.indexOf('\n'))}`);
    await expectUntouched(
      journal.path,
      'JOURNAL_HEADER',
      /emptyheader\.jsonl:1: line 1 is not a session header \(it needs "type":"session"\): this file is not a Harness journal, or its header line was damaged\./,
    );
  });

  it('a foreign version → JOURNAL_VERSION saying which version the file has and which this build reads', async () => {
    const journal = await newJournal({ id: 'future' });
    await completeTurn(journal, 1);
    await journal.close();
    const text = readFileSync(journal.path, 'utf8');
    writeFileSync(journal.path, text.replace('"version":1', '"version":2'));
    await expectUntouched(journal.path, 'JOURNAL_VERSION', /journal format version 2; this build reads version 1\. .*upgrade Harness/);
    const dsh = join(data.dir, 'sessions', 'dsh.jsonl');
    writeFileSync(dsh, '{"type":"session","version":0,"id":"x","createdAt":0,"cwd":"{{cwd}}","delegationDepth":0}\n{"type":"turn/start","data":{"turn":1}}\n');
    await expectUntouched(dsh, 'JOURNAL_VERSION', /version 0; this build reads version 1\. .*harness import dsh/);
    expect((await codeOf(readJournalHeader(dsh))).code).toBe('JOURNAL_VERSION');
  });

  it('a corrupt middle line → JOURNAL_CORRUPT naming file and line; salvage skips and reports it (read-only)', async () => {
    const journal = await newJournal({ id: 'corrupt' });
    await completeTurn(journal, 1);
    await journal.close();
    const lines = readFileSync(journal.path, 'utf8').split('\n');
    lines[5] = lines[5]!.slice(0, 40); // a line cut short in the middle of the file
    writeFileSync(journal.path, lines.join('\n'));
    await expectUntouched(journal.path, 'JOURNAL_CORRUPT', /corrupt\.jsonl:6: corrupt journal line/);
    expect((await codeOf(readAll(journal.path))).message).toContain('corrupt.jsonl:6');

    const before = readFileSync(journal.path);
    const salvaged = await openJournal(journal.path, { salvage: true });
    expect(salvaged.repairs.skippedLines).toEqual([expect.objectContaining({ lineNumber: 6 })]);
    expect(() => salvaged.journal.append('turn/start', { turn: 2 })).toThrow(expect.objectContaining({ code: 'JOURNAL_READ_ONLY' }));
    const session = await openSession(journal.path, { salvage: true, events: true });
    expect(session.skipped.map((s) => s.lineNumber)).toEqual([6]);
    expect(session.events!.map((e) => e.seq)).not.toContain(5);
    const skipped: number[] = [];
    expect((await readAll(journal.path, { salvage: true, onSkip: (s) => skipped.push(s.lineNumber) })).length).toBe(lines.length - 3);
    expect(skipped).toEqual([6]);
    expect(readFileSync(journal.path).equals(before)).toBe(true);
    expect(existsSync(`${journal.path}.lock`)).toBe(false);
  });

  it('a record of an unknown type that is not ignorable → UNKNOWN_EVENT_TYPE naming file and line', async () => {
    const dispose = registerEventType('acme/step-note');
    const journal = await newJournal({ id: 'unknown' });
    await completeTurn(journal, 1);
    await journal.append('acme/step-note' as never, { note: 'kept' } as never);
    await journal.append('acme/other' as never, { note: 'skippable' } as never, { ignorable: true });
    await journal.close();
    dispose();
    await expectUntouched(journal.path, 'UNKNOWN_EVENT_TYPE', /unknown\.jsonl:\d+: Unknown event type "acme\/step-note"/);
    const again = registerEventType('acme/step-note');
    try {
      const session = await openSession(journal.path);
      expect(session.lastSeq).toBe(journal.lastSeq); // the ignorable record of an unknown type is read past
    } finally {
      again();
    }
  });

  it('a seq out of order in the middle is JOURNAL_CORRUPT', async () => {
    const journal = await newJournal({ id: 'seqgap' });
    await completeTurn(journal, 1);
    await journal.close();
    const lines = readFileSync(journal.path, 'utf8').split('\n');
    lines.splice(3, 1);
    writeFileSync(journal.path, lines.join('\n'));
    await expectUntouched(journal.path, 'JOURNAL_CORRUPT', /seqgap\.jsonl:4: .*seq 4 where 3 was expected/);
  });
});

describe('repair on open', () => {
  it('moves a torn last line to a sidecar (fsynced) before cutting it; the journal keeps every complete line', async () => {
    for (const tail of ['{"seq":99,"type":"assistant/chu', '\u0000\u0000\u0000\u0000\n', '{"seq":20,"type":"turn/start","atMs":1,"data":{"turn":2}}']) {
      const journal = await newJournal();
      await completeTurn(journal, 1);
      await journal.close();
      const complete = readFileSync(journal.path);
      appendFileSync(journal.path, tail);
      const { journal: reopened, repairs } = await openJournal(journal.path);
      open.push(reopened);
      expect(repairs.tornTail).toEqual({ sidecarPath: expect.stringMatching(/\.jsonl\.torn-\d+/), byteCount: Buffer.byteLength(tail) });
      expect(readFileSync(repairs.tornTail!.sidecarPath, 'utf8')).toBe(tail);
      expect(readFileSync(journal.path).equals(complete)).toBe(true);
      expect(repairs.syntheticEvents).toEqual([]);
    }
  });

  it('closes a turn interrupted mid-stream: the kept text and reasoning become an interrupted message (no tool calls)', async () => {
    const journal = await newJournal({ id: 'midstream' });
    await completeTurn(journal, 1);
    await journal.append('turn/start', { turn: 2 });
    await journal.append('user/message', { turn: 2, message: createUserMessage('again') });
    await journal.append('step/start', { turn: 2, step: 1 });
    const chunks = [
      { type: 'reasoning-delta', index: 0, text: 'think' },
      { type: 'text-delta', index: 1, text: 'par' },
      { type: 'text-delta', index: 1, text: 'tial' },
      { type: 'tool-call-delta', index: 2, id: 'cut', name: 'read', arguments: '{"pa' },
    ] as const;
    for (const chunk of chunks) await journal.append('assistant/chunk', { turn: 2, step: 1, chunk });
    await journal.checkpoint();
    await simulateCrash(journal);

    const { journal: reopened, repairs } = await openJournal('midstream', { dataDir: data.dir });
    open.push(reopened);
    expect(repairs.syntheticEvents.map((e) => e.type)).toEqual(['assistant/message', 'step/end', 'turn/end']);
    const message = repairs.syntheticEvents[0]!.data as unknown as { message: { content: unknown[]; source: unknown }; interrupted: boolean; finish: { kind: string } };
    expect(message.message.content).toEqual([
      { type: 'reasoning', text: 'think' },
      { type: 'text', text: 'partial' },
    ]);
    expect(message.message.source).toEqual({ kind: 'model', provider: 'p', model: 'm' });
    expect(message.interrupted).toBe(true);
    expect(message.finish.kind).toBe('aborted');
    expect(repairs.syntheticEvents[2]!.data).toMatchObject({ turn: 2, reason: 'interrupted' });
    expect(reopened.state.openTurn).toBeUndefined();
    const events = await readAll(reopened.path);
    expect(historyProblems(events, reopened.state.messages)).toEqual([]);
  });

  it('answers pending tool calls: TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, and calls never journaled', async () => {
    const journal = await newJournal({ id: 'tools' });
    await journal.append('turn/start', { turn: 1 });
    await journal.append('step/start', { turn: 1, step: 1 });
    const calls = ['a', 'b', 'c', 'd'].map((id) => ({ type: 'tool-call' as const, id, name: 'run', arguments: '{}' }));
    await journal.append('assistant/message', { turn: 1, step: 1, message: createAssistantMessage({ provider: 'p', model: 'm', content: calls }), finish: { kind: 'tool-calls' } });
    for (const id of ['a', 'b', 'c']) await journal.append('tool/call', { turn: 1, step: 1, callId: id, name: 'run', arguments: '{}' });
    await journal.append('tool/start', { turn: 1, step: 1, callId: 'a' });
    await journal.append('tool/result', { turn: 1, step: 1, callId: 'a', message: createToolResultMessage({ callId: 'a', content: 'ok' }) });
    await journal.append('tool/start', { turn: 1, step: 1, callId: 'b' });
    await journal.checkpoint();
    await simulateCrash(journal);

    const { journal: reopened, repairs } = await openJournal('tools', { dataDir: data.dir });
    open.push(reopened);
    expect(repairs.syntheticEvents.map((e) => [e.type, (e.data as { callId?: string }).callId, (e.data as { code?: string }).code])).toEqual([
      ['tool/result', 'b', 'TOOL_OUTCOME_UNKNOWN'],
      ['tool/result', 'c', 'TOOL_NOT_STARTED'],
      ['tool/call', 'd', undefined],
      ['tool/result', 'd', 'TOOL_NOT_STARTED'],
      ['step/end', undefined, undefined],
      ['turn/end', undefined, undefined],
    ]);
    const result = repairs.syntheticEvents[0]!.data as unknown as { message: { content: [{ isError: boolean; toolCallId: string }] } };
    expect(result.message.content[0]).toMatchObject({ isError: true, toolCallId: 'b' });
    expect(reopened.state.pendingToolCalls).toEqual([]);
    expect(historyProblems(await readAll(reopened.path), reopened.state.messages)).toEqual([]);
    // Reopening a repaired journal repairs nothing.
    await reopened.close();
    const again = await openJournal('tools', { dataDir: data.dir });
    open.push(again.journal);
    expect(again.repairs.syntheticEvents).toEqual([]);
  });

  it('closes an open compaction; a failed call (finish error) adds no message', async () => {
    const journal = await newJournal({ id: 'compacting' });
    await journal.append('turn/start', { turn: 1 });
    await journal.append('step/start', { turn: 1, step: 1 });
    await journal.append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'lost' } });
    await journal.append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'finish', finish: { kind: 'error', failure: { code: 'CONTEXT_WINDOW_EXCEEDED', message: 'too long' } } } });
    await journal.append('compaction/start', { trigger: 'context-window-exceeded', messageCount: 0 });
    await journal.checkpoint();
    await simulateCrash(journal);
    const { journal: reopened, repairs } = await openJournal('compacting', { dataDir: data.dir });
    open.push(reopened);
    expect(repairs.syntheticEvents.map((e) => e.type)).toEqual(['compaction/end', 'step/end', 'turn/end']);
    expect(repairs.syntheticEvents[0]!.data).toMatchObject({ outcome: 'failed', failure: { code: 'INTERRUPTED' } });
    expect(reopened.state.compacting).toBe(false);
    expect(reopened.state.messages).toEqual([]);
  });
});

/** Leaves the journal as a killed writer would: lines written, lock file still naming a dead pid. */
async function simulateCrash(journal: SessionJournal): Promise<void> {
  await journal.checkpoint();
  await journal.close();
  const dead = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => dead.on('exit', resolve));
  writeFileSync(`${journal.path}.lock`, `${dead.pid}\n`);
  const index = open.indexOf(journal);
  if (index >= 0) open.splice(index, 1);
}

describe('replay: read, fork, list', () => {
  it('readJournal streams every event of a journal larger than its read buffer', async () => {
    const journal = await newJournal({ id: 'big' });
    await journal.append('turn/start', { turn: 1 });
    for (let i = 0; i < 30_000; i++) journal.append('tool/output', { turn: 1, step: 1, callId: 'c', text: `line ${i} `.repeat(10) });
    await journal.close();
    let count = 0;
    let contiguous = true;
    for await (const event of readJournal(journal.path)) {
      count++;
      if (event.seq !== count) contiguous = false;
    }
    expect(count).toBe(30_001);
    expect(contiguous).toBe(true);
    expect((await readJournalHeader(journal.path)).id).toBe('big');
  });

  it('forks a prefix verbatim; the fork names its parent and folds alone', async () => {
    const source = await newJournal({ id: 'source' });
    await completeTurn(source, 1);
    const boundary = source.lastSeq;
    await completeTurn(source, 2);
    await source.close();
    const sourceEvents = await readAll(source.path);

    const { journal: fork, repairs } = await forkSession('source', { dataDir: data.dir, atSeq: boundary, id: 'fork' });
    open.push(fork);
    expect(repairs.syntheticEvents).toEqual([]);
    expect(fork.header.parent).toEqual({ sessionId: 'source', seq: boundary });
    expect(fork.lastSeq).toBe(boundary);
    expect(fork.state).toEqual({ ...stateAt(sourceEvents, boundary), sessionId: 'fork' });
    await completeTurn(fork, 2, 'a different second turn');
    await fork.close();
    const sourceLines = readFileSync(source.path, 'utf8').split('\n');
    const forkLines = readFileSync(fork.path, 'utf8').split('\n');
    expect(forkLines.slice(1, boundary + 1)).toEqual(sourceLines.slice(1, boundary + 1));
    expect((await openSession(fork.path)).state.turnCount).toBe(2);

    const inside = await codeOf(forkSession('source', { dataDir: data.dir, atSeq: boundary + 3, id: 'inside' }));
    expect(inside.code).toBe('FORK_INSIDE_TURN');
    expect(inside.message).toContain(`Fork at seq ${boundary}`);
    expect(existsSync(join(data.dir, 'sessions', 'inside.jsonl'))).toBe(false);
    const closed = await forkSession('source', { dataDir: data.dir, atSeq: boundary + 3, id: 'inside', closeOpenTurn: true });
    open.push(closed.journal);
    expect(closed.repairs.syntheticEvents.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 2, reason: 'interrupted' } });
    // The fork says it cut the turn; it does not claim a crash.
    const forkEnd = closed.repairs.syntheticEvents.at(-1)!.data as { failure?: { message: string } };
    expect(forkEnd.failure?.message).toBe(`The fork at seq ${boundary + 3} cut the session while turn 2 was running; the fork closed it.`);
    expect(closed.journal.state.openTurn).toBeUndefined();
    expect((await codeOf(forkSession('source', { dataDir: data.dir, atSeq: 10_000 }))).code).toBe('FORK_OUT_OF_RANGE');
  });

  it('FORK_INSIDE_TURN names only a seq that works, in one sentence: the seq before the turn, or closeOpenTurn', async () => {
    const source = await newJournal({ id: 'inside-turn' });
    await completeTurn(source, 1);
    const boundary = source.lastSeq;
    await completeTurn(source, 2);
    await source.close();
    // The line of turn 2's end is damaged: a message naming that seq would send the fork past the damage.
    const lines = readFileSync(source.path, 'utf8').split('\n');
    const endLine = lines.findLastIndex((line) => line.includes('"turn/end"'));
    lines[endLine] = '{"not an event"';
    writeFileSync(source.path, lines.join('\n'));
    const inside = await codeOf(forkSession('inside-turn', { dataDir: data.dir, atSeq: boundary + 3, id: 'inside' }));
    expect(inside.code).toBe('FORK_INSIDE_TURN');
    expect(inside.message).toBe(
      `Seq ${boundary + 3} of session inside-turn is inside turn 2 (started at seq ${boundary + 1}). Fork at seq ${boundary} (the last seq before that turn), or pass closeOpenTurn: true to fork at seq ${boundary + 3} with synthetic events closing the turn in the fork.`,
    );
    // The seq it names works.
    const before = await forkSession('inside-turn', { dataDir: data.dir, atSeq: boundary, id: 'before' });
    open.push(before.journal);
    expect(before.journal.lastSeq).toBe(boundary);
  });

  it('forks at seq 0: no event, when seq 1 opens a turn', async () => {
    const source = await newJournal({ id: 'starts-in-a-turn' });
    await completeTurn(source, 1);
    await source.close();
    const { journal: fork, repairs } = await forkSession('starts-in-a-turn', { dataDir: data.dir, atSeq: 0, id: 'empty-fork' });
    open.push(fork);
    expect(repairs.syntheticEvents).toEqual([]);
    expect(fork.header.parent).toEqual({ sessionId: 'starts-in-a-turn', seq: 0 });
    expect(fork.lastSeq).toBe(0);
    expect(fork.state.turnCount).toBe(0);
    await fork.close();
    expect(await readAll(fork.path)).toEqual([]);
  });

  it('lists sessions with title, turn count, token totals and last update, newest first', async () => {
    let clock = 1000;
    const a = await newJournal({ id: 'a', now: () => clock++ });
    await completeTurn(a, 1);
    await a.append('session/title', { title: 'First' });
    await a.close();
    clock = 5000;
    const b = await newJournal({ id: 'b', now: () => clock++ });
    await completeTurn(b, 1);
    await completeTurn(b, 2);
    await b.close();
    writeFileSync(join(data.dir, 'sessions', 'broken.jsonl'), 'not json\n');
    const list = await listSessions(data.dir);
    expect(list.map((s) => s.id)).toEqual(['b', 'a', 'broken']);
    expect(list[0]).toMatchObject({ id: 'b', turnCount: 2, usage: { inputTokens: 28, outputTokens: 8 }, eventCount: b.lastSeq });
    expect(list[0]!.lastUpdateAtMs).toBeGreaterThanOrEqual(5000);
    expect(list[1]).toMatchObject({ id: 'a', title: 'First', turnCount: 1, usage: { inputTokens: 14, outputTokens: 4 } });
    expect(list[2]!.error?.code).toBe('JOURNAL_HEADER');
  });
});
