/**
 * Loading a cassette is linear in memory (issue 22, "no quadratic paths … the cassette"): the heap a
 * loaded cassette retains per recorded call is the same for 5,000 turns as for 500. Each recorded
 * call used to keep the state before it (its whole surface) and its request rebuilt from its
 * `request/snapshot` (the whole history again, plus the reader's own copy): N references for the
 * Nth call. On main before: 12.4 KB per call at 500 turns, 102 KB at 5,000 (8.3x; 512 MB for that
 * journal). Now both are built on demand: ~3.2-4.0 KB per call at either size.
 *
 * The journals are written with the real writer (`createJournal`), as the agent loop journals a
 * one-step turn: its prompt, the request header once, the request snapshot (`RequestRecorder`, as
 * the loop makes it), the chunks, the reply. Heap after a forced full GC (`--expose-gc` set at run
 * time), with the cassette held, minus the heap before loading it: a ratio of per-call figures in
 * one process, never a wall-clock threshold.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { loadCassette, type Cassette } from '../../plugins/llm-replay/index.ts';
import { createAssistantMessage, createUserMessage, requestHash, type GenerateOptions, type SessionJournal } from '../../runtime/index.ts';
import { createJournal, RequestRecorder } from '../../runtime/internal.ts';
import { tempDataDir } from '../session/support.ts';

const SMALL = 500;
const LARGE = 5_000;
/** Heap retained per call with LARGE turns ÷ with SMALL: at most this. */
const RATIO = 1.5;

const data = tempDataDir('cassette-memory');
afterAll(() => data.cleanup());

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function fullGc(): void {
  for (let i = 0; i < 3; i++) gc();
}

const header = { config: { provider: 'p', model: 'm' }, tools: [] };

/** Writes `turns` one-call turns as the agent loop journals them; returns the journal's path. */
async function record(turns: number): Promise<string> {
  const journal: SessionJournal = await createJournal({ dataDir: data.dir, id: `memory-${turns}` });
  const recorder = new RequestRecorder();
  for (let turn = 1; turn <= turns; turn++) {
    await journal.append('turn/start', { turn });
    await journal.append('user/message', { turn, message: createUserMessage(`question ${turn}`) });
    await journal.append('step/start', { turn, step: 1 });
    if (turn === 1) await journal.append('request/header', { header, reason: 'initial' });
    const surface = journal.state.messages;
    const request: GenerateOptions = { provider: 'p', model: 'm', tools: [], messages: surface };
    await journal.append('request/snapshot', recorder.snapshot(turn, 1, request, surface), { ignorable: true });
    const text = `answer ${turn}`;
    for (const chunk of [
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'text-delta', index: 0, text },
      { type: 'block-end', index: 0 },
      { type: 'finish', finish: { kind: 'stop' } },
    ] as const)
      await journal.append('assistant/chunk', { turn, step: 1, chunk });
    const message = createAssistantMessage({ provider: 'p', model: 'm', content: text });
    await journal.append('assistant/message', { turn, step: 1, message, finish: { kind: 'stop' } });
    await journal.append('step/end', { turn, step: 1 });
    await journal.append('turn/end', { turn, reason: 'completed' });
  }
  await journal.close();
  return journal.path;
}

/** Every cassette loaded, held to the end: none is freed while another is measured. */
const held: Cassette[] = [];

/** Heap bytes a loaded cassette retains per recorded call. */
async function retainedPerCall(path: string): Promise<number> {
  fullGc();
  const before = process.memoryUsage().heapUsed;
  const cassette = await loadCassette(path);
  held.push(cassette);
  fullGc();
  return (process.memoryUsage().heapUsed - before) / cassette.calls.length;
}

describe('a loaded cassette', () => {
  it(`retains the same heap per recorded call for ${LARGE} turns as for ${SMALL} (within ${RATIO}x)`, { timeout: 120_000 }, async () => {
    const small = await record(SMALL);
    const large = await record(LARGE);
    await retainedPerCall(small); // warm-up: the code paths compiled, their caches made
    const perCallSmall = await retainedPerCall(small);
    const perCallLarge = await retainedPerCall(large);
    const [, a, b] = held as [Cassette, Cassette, Cassette];
    expect(a.calls).toHaveLength(SMALL);
    expect(b.calls).toHaveLength(LARGE);
    const ratio = perCallLarge / perCallSmall;
    expect(ratio, `heap bytes per call: ${perCallLarge.toFixed(0)} at ${LARGE} turns, ${perCallSmall.toFixed(0)} at ${SMALL}`).toBeLessThan(RATIO);

    // What was built on demand is what the recording holds: the last call's request and state.
    const last = b.calls.at(-1)!;
    expect(last.messageCount).toBe(2 * LARGE - 1);
    expect(last.snapshot).toMatchObject({ ok: true, messageCount: 2 * LARGE - 1, config: { provider: 'p', model: 'm' } });
    const state = last.stateBefore();
    expect(state.messages).toHaveLength(2 * LARGE - 1);
    expect(state.turnCount).toBe(LARGE);
    const rebuilt = last.request();
    expect(rebuilt?.ok).toBe(true);
    expect(rebuilt?.hash).toBe(requestHash({ provider: 'p', model: 'm', tools: [], messages: state.messages }));
    // Asked for an earlier call after a later one, the fold starts again.
    expect(b.calls[1]!.stateBefore().messages).toHaveLength(3);
    expect(b.calls[1]!.request()).toMatchObject({ ok: true, hash: b.calls[1]!.snapshot!.hash, request: { messages: { length: 3 } } });
    // Served in order, every request matches its recording (compared on the hash).
    for (const call of b.calls.slice(0, 3)) b.take({ provider: 'p', model: 'm', tools: [], messages: call.stateBefore().messages });
    expect(b.mismatches).toEqual([]);
  });
});
