/**
 * No quadratic paths in the fold (issue 22.3): the CPU per tool call of one message with 2,000 tool
 * calls is within a generous ratio of one with 10, through the journal writer (what the agent loop
 * does: tool/call, approval/decided, tool/start, tool/result per call, the state read per step) and
 * through a bulk fold. The old `tool/result` reducer spliced an immer draft array (~1.6 ms per call
 * at 1,800 calls, >100x the 10-call figure), so a ratio of 3 still catches it on a busy machine.
 * Ratios in one process, CPU time, best of several repetitions — never a wall-clock threshold.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  createAssistantMessage,
  createToolResultMessage,
  createUserMessage,
  foldEvents,
  registerEventType,
  type AnySessionEvent,
  type SessionEventMap,
  type SessionEventType,
} from '../../runtime/index.ts';
import { createJournal } from '../../runtime/session/journal.ts';
import { tempDataDir } from './support.ts';

const data = tempDataDir('scaling');
afterAll(() => data.cleanup());

/** CPU µs (user + system) spent inside `measured` sections. */
let measuredUs = 0;
function measured<T>(body: () => T): T {
  const before = process.cpuUsage();
  try {
    return body();
  } finally {
    const used = process.cpuUsage(before);
    measuredUs += used.user + used.system;
  }
}

/** Best per-call CPU of the measured sections over `reps` repetitions of `run(calls)` (each repetition runs `repeat` times). */
async function perCall(calls: number, reps: number, repeat: number, run: (calls: number) => Promise<void> | void): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let rep = 0; rep < reps; rep++) {
    measuredUs = 0;
    for (let k = 0; k < repeat; k++) await run(calls);
    best = Math.min(best, measuredUs / (calls * repeat));
  }
  return best;
}

type Step = [SessionEventType, unknown];

/** One step whose assistant message has `calls` tool calls, each answered. */
function manyCallsStep(calls: number, turn: number, step: number): Step[] {
  const blocks = Array.from({ length: calls }, (_, i) => ({ type: 'tool-call' as const, id: `c${turn}-${step}-${i}`, name: 'read', arguments: `{"path":"f${i}"}` }));
  const out: Step[] = [
    ['step/start', { turn, step }],
    ['assistant/message', { turn, step, message: createAssistantMessage({ provider: 'p', model: 'm', content: blocks }), finish: { kind: 'tool-calls' } }],
  ];
  for (const block of blocks) out.push(['tool/call', { turn, step, callId: block.id, name: block.name, arguments: block.arguments }]);
  for (const block of blocks) {
    out.push(['approval/decided', { turn, step, callId: block.id, decision: 'allow', decidedBy: 'test' }]);
    out.push(['tool/start', { turn, step, callId: block.id }]);
    out.push(['tool/result', { turn, step, callId: block.id, message: createToolResultMessage({ callId: block.id, content: `contents of f${block.id}` }) }]);
  }
  out.push(['step/end', { turn, step }]);
  return out;
}

/**
 * Appends each step's records and reads the state (measured), as the agent loop does; between two
 * steps the event loop turns (not measured), as it does while the loop awaits the next model call,
 * and the writer's background flush writes the queue there. No size threshold (`flushBytes`): an
 * append that crossed it encoded the queue inside the measured section, which only the long runs
 * ever did (a 10-call run's records were written at close, unmeasured). Without the turns a
 * session's thousands of steps were one synchronous burst whose growing backlog made every GC dearer.
 */
async function journalRun(id: string, steps: Step[][]): Promise<{ messages: number; pending: number }> {
  const journal = await createJournal({ dataDir: data.dir, id, flushBytes: Number.POSITIVE_INFINITY });
  journal.append('turn/start', { turn: 1 });
  journal.append('user/message', { turn: 1, message: createUserMessage('go') });
  for (let i = 0; i < steps.length; i++) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    measured(() => {
      for (const [type, value] of steps[i]!) journal.append(type, value as SessionEventMap[typeof type]);
      void journal.state.messages; // the loop reads the surface for the next request
    });
  }
  const state = measured(() => {
    journal.append('turn/end', { turn: 1, reason: 'completed' });
    return journal.state;
  });
  await journal.close();
  return { messages: state.messages.length, pending: state.pendingToolCalls.length };
}

let seq = 0;
let runs = 0;
function events(steps: Step[][]): AnySessionEvent[] {
  const out: AnySessionEvent[] = [];
  const push = (type: SessionEventType, value: unknown) => out.push({ seq: ++seq, type, atMs: seq, data: value } as AnySessionEvent);
  push('turn/start', { turn: 1 });
  push('user/message', { turn: 1, message: createUserMessage('go') });
  for (const step of steps) for (const [type, value] of step) push(type, value);
  push('turn/end', { turn: 1, reason: 'completed' });
  return out;
}

describe('CPU per tool call is flat from 10 to 2,000 tool calls', () => {
  it('in one message, through the journal writer (the agent loop’s appends and state reads)', async () => {
    const run = (calls: number) => journalRun(`one-${calls}-${runs++}`, [manyCallsStep(calls, 1, 1)]).then(() => undefined);
    await perCall(10, 1, 20, run); // warm-up
    const small = await perCall(10, 4, 25, run);
    const large = await perCall(2_000, 2, 1, run);
    expect(await journalRun('check', [manyCallsStep(2_000, 1, 1)])).toEqual({ messages: 2_002, pending: 0 });
    expect(large / small, `µs per call: ${large.toFixed(1)} at 2,000, ${small.toFixed(1)} at 10`).toBeLessThan(3);
  });

  it('in one message, through a bulk fold', async () => {
    const sets = new Map([10, 2_000].map((n) => [n, events([manyCallsStep(n, 1, 1)])]));
    const run = (calls: number) => void measured(() => foldEvents(sets.get(calls)!));
    await perCall(10, 1, 50, run);
    const small = await perCall(10, 5, 200, run);
    const large = await perCall(2_000, 5, 1, run);
    const state = foldEvents(sets.get(2_000)!);
    expect(state.pendingToolCalls).toEqual([]);
    expect(state.messages).toHaveLength(2_002);
    expect(large / small, `µs per call: ${large.toFixed(2)} at 2,000, ${small.toFixed(2)} at 10`).toBeLessThan(3);
  });

  it('per step and per session: one call per step, 10 steps vs 2,000 steps in a session', async () => {
    const session = (steps: number) => Array.from({ length: steps }, (_, i) => manyCallsStep(1, 1, i + 1));
    const run = (steps: number) => journalRun(`session-${steps}-${runs++}`, session(steps)).then(() => undefined);
    await perCall(10, 1, 20, run);
    const small = await perCall(10, 4, 25, run);
    const large = await perCall(2_000, 2, 1, run);
    expect(await journalRun('session-check', session(2_000))).toEqual({ messages: 4_001, pending: 0 });
    expect(large / small, `µs per call: ${large.toFixed(1)} at 2,000 steps, ${small.toFixed(1)} at 10`).toBeLessThan(3);
  });

  it('pending calls keep call order, decisions and starts, and answer the first of a repeated id', () => {
    const steps: Step[] = [
      ['tool/call', { turn: 1, step: 1, callId: 'a', name: 'x', arguments: '{}' }],
      ['tool/call', { turn: 1, step: 1, callId: 'b', name: 'y', arguments: '{}' }],
      ['tool/call', { turn: 1, step: 1, callId: 'a', name: 'z', arguments: '{}' }],
      ['tool/call', { turn: 1, step: 1, callId: 'c', name: 'w', arguments: '{}' }],
      ['approval/decided', { turn: 1, step: 1, callId: 'c', decision: 'deny', decidedBy: 'test' }],
      ['tool/start', { turn: 1, step: 1, callId: 'b' }],
      ['tool/result', { turn: 1, step: 1, callId: 'a', message: createToolResultMessage({ callId: 'a', content: 'r' }) }],
      ['tool/result', { turn: 1, step: 1, callId: 'nope', message: createToolResultMessage({ callId: 'nope', content: 'r' }) }],
    ];
    const state = foldEvents(events([steps]));
    expect(state.pendingToolCalls.map((p) => [p.callId, p.name, p.started, p.decision])).toEqual([
      ['b', 'y', true, undefined],
      ['a', 'z', false, undefined],
      ['c', 'w', false, 'deny'],
    ]);
    expect(Object.isFrozen(state.pendingToolCalls)).toBe(true);
    expect(state.pendingToolCalls.every((p) => Object.isFrozen(p))).toBe(true);
  });
});

/**
 * A plugin record per turn (a reducer of the plugin's own type: a todo list, a note) keeps a long
 * session's fold linear. Each one used to finish the fold's working surface, so the next append
 * copied the whole surface: at 10,000 turns ~120 µs a turn, ~40x a 500-turn session's. Now a
 * reducer that leaves the surface alone runs over the working surface.
 */
describe('CPU per turn of a bulk fold is flat from 500 to 10,000 turns with a plugin record per turn', () => {
  const turns = (count: number): AnySessionEvent[] => {
    const out: AnySessionEvent[] = [];
    let at = 0;
    const push = (type: string, value: unknown) => out.push({ seq: ++at, type, atMs: at, data: value } as unknown as AnySessionEvent);
    for (let turn = 1; turn <= count; turn++) {
      push('turn/start', { turn });
      push('user/message', { turn, message: createUserMessage(`question ${turn}`) });
      push('step/start', { turn, step: 1 });
      push('acme/todo', { items: [`item ${turn}`] });
      push('assistant/message', { turn, step: 1, message: createAssistantMessage({ provider: 'p', model: 'm', content: `answer ${turn}` }), finish: { kind: 'stop' } });
      push('step/end', { turn, step: 1 });
      push('turn/end', { turn, reason: 'completed' });
    }
    return out;
  };

  it('within 2.5x (the copy per plugin event was 9.6x)', async () => {
    const dispose = registerEventType('acme/todo', {
      reduce: (draft, event, surface) => {
        (draft as unknown as { todo?: unknown }).todo = { items: (event.data as unknown as { items: string[] }).items, atMessage: surface.length };
      },
    });
    try {
      const sets = new Map([500, 10_000].map((n) => [n, turns(n)]));
      const run = (count: number) => void measured(() => foldEvents(sets.get(count)!));
      await perCall(500, 1, 10, run); // warm-up
      const small = await perCall(500, 5, 4, run);
      const large = await perCall(10_000, 6, 1, run); // best of 6: one GC of the 20,000-message surface can land in a repetition
      const state = foldEvents(sets.get(10_000)!);
      expect(state.messages).toHaveLength(20_000);
      expect((state as unknown as { todo: unknown }).todo).toEqual({ items: ['item 10000'], atMessage: 19_999 });
      expect(large / small, `µs per turn: ${large.toFixed(1)} at 10,000 turns, ${small.toFixed(1)} at 500`).toBeLessThan(2.5);
    } finally {
      dispose();
    }
  });
});
