import { afterEach, describe, expect, it } from 'vitest';
import {
  createAssistantMessage,
  createToolResultMessage,
  createUserMessage,
  foldEvents,
  HarnessError,
  registerEventType,
  stateAt,
  type AnySessionEvent,
  type SessionEventMap,
  type SessionEventType,
} from '../../runtime/index.ts';
import { Folder, initialState, reduceEvent } from '../../runtime/internal.ts';

let seq = 0;
function ev<T extends SessionEventType>(type: T, data: SessionEventMap[T], ignorable?: true): AnySessionEvent {
  seq++;
  return (ignorable ? { seq, type, atMs: seq, data, ignorable } : { seq, type, atMs: seq, data }) as AnySessionEvent;
}

function sample(): AnySessionEvent[] {
  seq = 0;
  const user = createUserMessage('hello');
  const reply = createAssistantMessage({ provider: 'p', model: 'm', content: [{ type: 'tool-call', id: 'c1', name: 'read', arguments: '{}' }] });
  const result = createToolResultMessage({ callId: 'c1', content: 'file' });
  const done = createAssistantMessage({ provider: 'p', model: 'm', content: 'done' });
  return [
    ev('turn/start', { turn: 1 }),
    ev('user/message', { turn: 1, message: user }),
    ev('step/start', { turn: 1, step: 1 }),
    ev('request/header', { header: { config: { provider: 'p', model: 'm' }, tools: [] }, reason: 'initial' }),
    ev('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'tool-call-delta', index: 0, id: 'c1', name: 'read', arguments: '{}' } }),
    ev('assistant/message', { turn: 1, step: 1, message: reply, finish: { kind: 'tool-calls' }, usage: { inputTokens: 10, outputTokens: 2 } }),
    ev('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'read', arguments: '{}' }),
    ev('approval/decided', { turn: 1, step: 1, callId: 'c1', decision: 'allow', decidedBy: 'test' }),
    ev('tool/start', { turn: 1, step: 1, callId: 'c1' }),
    ev('tool/output', { turn: 1, step: 1, callId: 'c1', text: 'fi' }, true),
    ev('tool/result', { turn: 1, step: 1, callId: 'c1', message: result }),
    ev('step/end', { turn: 1, step: 1 }),
    ev('step/start', { turn: 1, step: 2 }),
    ev('llm/retry', { turn: 1, step: 2, attempt: 1, maxRetries: 2, delayMs: 5, failure: { code: 'SERVER', message: '500' } }),
    ev('assistant/message', { turn: 1, step: 2, message: done, finish: { kind: 'stop' }, usage: { inputTokens: 5, cacheReadTokens: 7 } }),
    ev('step/end', { turn: 1, step: 2 }),
    ev('turn/end', { turn: 1, reason: 'completed' }),
    ev('compaction/start', { trigger: 'request', messageCount: 4 }),
    ev('compaction/summary', { summary: 'sum', provider: 'p', model: 'm', usage: { outputTokens: 3 } }),
    ev('surface/replace', { start: 0, end: 3, messages: [createUserMessage('summary')] }),
    ev('compaction/end', { outcome: 'compacted', keptMessageCount: 2 }),
    ev('session/title', { title: 'Hello' }),
    ev('acme/note' as SessionEventType, { text: 'ignore me' } as never, true),
  ];
}

describe('the fold', () => {
  it('folds turns, steps, messages, tool calls, usage, compaction and title', () => {
    const events = sample();
    const steps: unknown[] = [];
    let state = initialState('s');
    for (const event of events) {
      state = reduceEvent(state, event);
      if (event.type === 'tool/call' || event.type === 'approval/decided' || event.type === 'tool/start') steps.push(state.pendingToolCalls[0]);
    }
    expect(steps).toEqual([
      { callId: 'c1', name: 'read', arguments: '{}', turn: 1, step: 1, started: false },
      { callId: 'c1', name: 'read', arguments: '{}', turn: 1, step: 1, started: false, decision: 'allow' },
      { callId: 'c1', name: 'read', arguments: '{}', turn: 1, step: 1, started: true, decision: 'allow' },
    ]);
    expect(state.pendingToolCalls).toEqual([]);
    expect(state.messages.map((m) => (m.content[0]!.type === 'text' ? (m.content[0] as { text: string }).text : m.content[0]!.type))).toEqual(['summary', 'done']);
    expect(state.usage).toEqual({ inputTokens: 15, outputTokens: 5, cacheReadTokens: 7 });
    expect(state.usage).not.toHaveProperty('cacheWriteTokens');
    expect(state.turnCount).toBe(1);
    expect(state.openTurn).toBeUndefined();
    expect(state.lastTurnEnd).toEqual({ turn: 1, reason: 'completed' });
    expect(state.header?.config).toEqual({ provider: 'p', model: 'm' });
    expect(state.compacting).toBe(false);
    expect(state.title).toBe('Hello');
    expect(state.lastSeq).toBe(22); // the ignorable unknown record (23) changes nothing
    expect(Object.isFrozen(state) && Object.isFrozen(state.messages)).toBe(true);
  });

  it('foldEvents (one draft) equals the step-by-step reduction, and stateAt(seq) equals the fold of each prefix', () => {
    const events = sample();
    let stepwise = initialState('');
    for (const event of events) {
      stepwise = reduceEvent(stepwise, event);
      const prefix = events.filter((e) => e.seq <= event.seq);
      expect(stateAt(events, event.seq)).toEqual(stepwise);
      expect(foldEvents(prefix)).toEqual(stepwise);
    }
    expect(foldEvents(events)).toEqual(stepwise);
  });

  it('tracks open turn and step, and compaction', () => {
    const events = sample();
    expect(stateAt(events, 3).openTurn).toEqual({ turn: 1, step: 1, stepOpen: true });
    expect(stateAt(events, 12).openTurn).toEqual({ turn: 1, step: 1, stepOpen: false });
    expect(stateAt(events, 18).compacting).toBe(true);
  });

  it('returns the same state object for chunks, tool output, retries and ignorable unknown records', () => {
    const events = sample();
    const state = foldEvents(events.slice(0, 4));
    for (const event of events.filter((e) => ['assistant/chunk', 'tool/output', 'llm/retry', 'acme/note'].includes(e.type))) {
      expect(reduceEvent(state, event)).toBe(state);
    }
  });

  it('refuses an unknown type that is not ignorable, naming type and seq', () => {
    const event = { seq: 7, type: 'acme/unknown', atMs: 0, data: {} } as unknown as AnySessionEvent;
    let caught: unknown;
    try {
      reduceEvent(initialState('s'), event);
    } catch (error) {
      caught = error;
    }
    expect(HarnessError.is(caught) && caught.code).toBe('UNKNOWN_EVENT_TYPE');
    expect((caught as Error).message).toContain('acme/unknown');
    expect((caught as Error).message).toContain('seq 7');
    expect(() => foldEvents([event])).toThrow(/acme\/unknown/);
  });

  it('refuses a surface/replace outside the surface', () => {
    const event = { seq: 1, type: 'surface/replace', atMs: 0, data: { start: 0, end: 2, messages: [] } } as AnySessionEvent;
    expect(() => reduceEvent(initialState('s'), event)).toThrow(/surface of 0 messages/);
  });

  describe('plugin event types', () => {
    const disposers: (() => void)[] = [];
    afterEach(() => {
      for (const d of disposers.splice(0)) d();
    });

    it('a registered reducer folds its type; disposing it makes the type unknown again', () => {
      disposers.push(
        registerEventType('todo/write', {
          reduce: (draft, event) => {
            draft.title = `todos: ${(event.data as unknown as { todos: string[] }).todos.join(', ')}`;
          },
        }),
      );
      const event = { seq: 1, type: 'todo/write', atMs: 0, data: { todos: ['a', 'b'] } } as unknown as AnySessionEvent;
      expect(reduceEvent(initialState('s'), event).title).toBe('todos: a, b');
      disposers.pop()!();
      expect(() => reduceEvent(initialState('s'), event)).toThrow(/Unknown event type "todo\/write"/);
    });

    it('plugin reducers may change the surface through the surface or the draft; one-draft fold and step-by-step agree', () => {
      disposers.push(
        registerEventType('acme/pin', { reduce: (_draft, event, surface) => surface.append(createUserMessage(`pin ${(event.data as unknown as { n: number }).n}`, { id: `pin-${event.seq}` })) }),
      );
      disposers.push(
        registerEventType('acme/drop-first', {
          reduce: (draft) => {
            draft.messages.splice(0, 1);
          },
        }),
      );
      const events = sample().slice(0, 11);
      let n = events.length;
      const extra = (type: string, data: unknown): AnySessionEvent => ({ seq: ++n, type, atMs: 0, data }) as unknown as AnySessionEvent;
      events.push(extra('acme/pin', { n: 1 }), extra('acme/drop-first', {}), extra('user/message', { message: createUserMessage('after', { id: 'after' }) }), extra('acme/pin', { n: 2 }));
      let stepwise = initialState('');
      for (const event of events) stepwise = reduceEvent(stepwise, event);
      const folded = foldEvents(events);
      expect(folded).toEqual(stepwise);
      expect(folded.messages.map((m) => m.id)).toEqual([...stepwise.messages.map((m) => m.id)]);
      expect(folded.messages.map((m) => m.id).slice(-3)).toEqual(['pin-12', 'after', 'pin-15']);
      expect(folded.messages).toHaveLength(5);
      expect(Object.isFrozen(folded.messages) && folded.messages.every((m) => Object.isFrozen(m))).toBe(true);
    });

    it('plugin reducers that read the surface fold over the working surface; one-draft fold and step-by-step agree, frozen', () => {
      type Noted = { notes?: { count: number; at: number; last?: string }[] };
      // Reads the surface's length and its last message through the draft (the fold's fast path).
      disposers.push(
        registerEventType('acme/note', {
          reduce: (draft, _event, surface) => {
            const notes = ((draft as unknown as Noted).notes ??= []);
            const last = draft.messages.at(-1);
            notes.push({ count: surface.length, at: draft.messages.length, ...(last ? { last: last.id } : {}) });
          },
        }),
      );
      // Reads surface.messages but swallows what that throws on the fast path: it must still see them.
      disposers.push(
        registerEventType('acme/peek', {
          reduce: (draft, _event, surface) => {
            let ids = '';
            try {
              ids = surface.messages.map((m) => m.id).join(',');
            } catch {
              ids = 'unseen';
            }
            draft.title = ids;
          },
        }),
      );
      const events = sample().slice(0, 11);
      let n = events.length;
      const extra = (type: string, data: unknown): AnySessionEvent => ({ seq: ++n, type, atMs: 0, data }) as unknown as AnySessionEvent;
      events.push(
        extra('acme/note', {}),
        extra('user/message', { message: createUserMessage('one', { id: 'one' }) }),
        extra('acme/note', {}),
        extra('acme/peek', {}),
        extra('user/message', { message: createUserMessage('two', { id: 'two' }) }),
        extra('acme/note', {}),
      );
      let stepwise = initialState('');
      for (const event of events) stepwise = reduceEvent(stepwise, event);
      const folded = foldEvents(events);
      expect(folded).toEqual(stepwise);
      const notes = (folded as unknown as Noted).notes!;
      expect(notes.map((note) => [note.count, note.at, note.last])).toEqual([
        [3, 3, stepwise.messages[2]!.id],
        [4, 4, 'one'],
        [5, 5, 'two'],
      ]);
      const firstFour = folded.messages.slice(0, 4).map((m) => m.id);
      expect(folded.title).toBe(firstFour.join(','));
      expect(folded.messages.map((m) => m.id).slice(-2)).toEqual(['one', 'two']);
      expect(Object.isFrozen(folded) && Object.isFrozen(notes) && notes.every((note) => Object.isFrozen(note))).toBe(true);
      expect(Object.isFrozen(folded.messages) && folded.messages.every((m) => Object.isFrozen(m))).toBe(true);
      // A reducer that throws changes nothing: the fold before it goes on.
      disposers.push(
        registerEventType('acme/fail', {
          reduce: () => {
            throw new Error('nope');
          },
        }),
      );
      const folder = new Folder(initialState(''));
      for (const event of events) folder.apply(event);
      expect(() => folder.apply(extra('acme/fail', {}))).toThrow('nope');
      folder.apply(extra('user/message', { message: createUserMessage('three', { id: 'three' }) }));
      const after = folder.finish();
      expect(after.messages.map((m) => m.id)).toEqual([...folded.messages.map((m) => m.id), 'three']);
      expect((after as unknown as Noted).notes).toEqual(notes);
    });

    it('state.lastSeq is the last state-changing seq on every path of the fold: pending calls, core, plugin, after a finish', () => {
      disposers.push(registerEventType('acme/mark', { reduce: (draft) => void (draft.title = 'marked') })); // leaves the surface alone
      disposers.push(registerEventType('acme/pin', { reduce: (_draft, event, surface) => surface.append(createUserMessage('pin', { id: `pin-${event.seq}` })) }));
      const events = sample();
      const at = (type: string): number => events.find((event) => event.type === type)!.seq;
      let n = 100;
      const extra = (type: string, data: unknown): AnySessionEvent => ({ seq: ++n, type, atMs: 0, data }) as unknown as AnySessionEvent;
      const call = (type: 'tool/call' | 'tool/start', callId: string): AnySessionEvent =>
        extra(type, type === 'tool/call' ? { turn: 1, step: 1, callId, name: 'read', arguments: '{}' } : { turn: 1, step: 1, callId });

      const folder = new Folder(initialState('s'));
      for (const event of events.slice(0, at('tool/start'))) folder.apply(event);
      expect(folder.finish().lastSeq).toBe(at('tool/start')); // a pending-call event last
      folder.apply(events[at('tool/output') - 1]!); // ignorable: changes nothing
      expect(folder.finish().lastSeq).toBe(at('tool/start'));
      folder.apply(events[at('tool/result') - 1]!);
      folder.apply(events[at('tool/result')]!); // step/end: a core event after a pending one
      expect(folder.finish().lastSeq).toBe(at('tool/result') + 1);
      // After a finish: a pending event alone, then a plugin reducer on the working path, then on the finished path.
      folder.apply(call('tool/call', 'c2'));
      expect(folder.finish().lastSeq).toBe(n);
      folder.apply(call('tool/start', 'c2'));
      folder.apply(extra('acme/mark', {}));
      expect(folder.finish()).toMatchObject({ lastSeq: n, title: 'marked' });
      folder.apply(extra('user/message', { message: createUserMessage('u', { id: 'u' }) }));
      folder.apply(call('tool/call', 'c3'));
      folder.apply(extra('acme/mark', {})); // the working path with a surface and pending calls in progress
      folder.apply(call('tool/call', 'c4'));
      expect(folder.finish().lastSeq).toBe(n);
      folder.apply(call('tool/start', 'c4'));
      folder.apply(extra('acme/pin', {})); // the finished path
      const last = folder.finish();
      expect(last.lastSeq).toBe(n);
      expect(last.pendingToolCalls.map((c) => [c.callId, c.started])).toEqual([
        ['c2', true],
        ['c3', false],
        ['c4', true],
      ]);
      // One event at a time agrees.
      expect(reduceEvent(initialState('s'), events[at('tool/call') - 1]!).lastSeq).toBe(at('tool/call'));
    });

    it('a registered type without a reducer is known and changes nothing; core types cannot be re-registered', () => {
      disposers.push(registerEventType('acme/marker'));
      const state = initialState('s');
      expect(reduceEvent(state, { seq: 1, type: 'acme/marker', atMs: 0, data: {} } as unknown as AnySessionEvent)).toBe(state);
      expect(() => registerEventType('acme/marker')).toThrow(/already registered/);
      expect(() => registerEventType('turn/start')).toThrow(/core type/);
      expect(() => registerEventType('nope')).toThrow(/area\/action/);
    });
  });
});
