/**
 * A session with many subagents is walked with one listing of the store (issue 22, "no quadratic
 * paths … fork, the CLI renderers"). A store's listing reads every session in it; fork, `harness
 * replay` and the OTLP export listed the store once per session of the tree (`listChildSessions` per
 * child), so a parent with K subagents read the store K + 1 times: O(K × store). Now one
 * `childSessionIndex` serves the whole tree. Counted, not timed: `FileJournalStore.list` calls.
 *
 * The tree (written with the real writer): a parent whose one step ran K subagent calls, each
 * child a session linked to its call; the first child ran a grandchild the same way.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { Io } from '../../cli/env.ts';
import { replayCommand } from '../../cli/commands/replay.ts';
import { createAssistantMessage, createToolResultMessage, createUserMessage, forkSession, type SessionHeader } from '../../runtime/index.ts';
import { createJournal } from '../../runtime/internal.ts';
import { FileJournalStore } from '../../runtime/session/file-store.ts';
import { tempDir } from '../agent/support.ts';

const K = 6;
const dir = tempDir('harness-tree-listing-');
const dataDir = join(dir, 'data');
afterEach(() => vi.restoreAllMocks());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One completed turn that ran `calls` tool calls (each answered), then answered `answer`. */
async function session(id: string, answer: string, calls: readonly string[], parentSession?: SessionHeader['parentSession']): Promise<number> {
  const journal = await createJournal({ dataDir, id, ...(parentSession ? { parentSession } : {}) });
  await journal.append('turn/start', { turn: 1 });
  await journal.append('user/message', { turn: 1, message: createUserMessage(`task of ${id}`) });
  await journal.append('step/start', { turn: 1, step: 1 });
  if (calls.length > 0) {
    const content = calls.map((callId) => ({ type: 'tool-call' as const, id: callId, name: 'run_subagent', arguments: '{}' }));
    await journal.append('assistant/message', { turn: 1, step: 1, message: createAssistantMessage({ provider: 'p', model: 'm', content }), finish: { kind: 'tool-calls' } });
    for (const callId of calls) await journal.append('tool/call', { turn: 1, step: 1, callId, name: 'run_subagent', arguments: '{}' });
    for (const callId of calls) {
      await journal.append('tool/start', { turn: 1, step: 1, callId });
      await journal.append('tool/result', { turn: 1, step: 1, callId, message: createToolResultMessage({ callId, content: `done ${callId}` }) });
    }
    await journal.append('step/end', { turn: 1, step: 1 });
    await journal.append('step/start', { turn: 1, step: 2 });
  }
  const step = calls.length > 0 ? 2 : 1;
  await journal.append('assistant/message', { turn: 1, step, message: createAssistantMessage({ provider: 'p', model: 'm', content: answer }), finish: { kind: 'stop' } });
  await journal.append('step/end', { turn: 1, step });
  await journal.append('turn/end', { turn: 1, reason: 'completed' });
  const seq = journal.lastSeq;
  await journal.close();
  return seq;
}

// Children first: a fork keeps a child's events written no later than the parent's fork point.
await session('parent.sub1.sub1', 'GRANDCHILD_OK', [], { sessionId: 'parent.sub1', callId: 'g1', depth: 2 });
for (let i = 1; i <= K; i++) await session(`parent.sub${i}`, `CHILD_${i}_OK`, i === 1 ? ['g1'] : [], { sessionId: 'parent', callId: `c${i}`, depth: 1 });
const parentLastSeq = await session(
  'parent',
  'PARENT_DONE',
  Array.from({ length: K }, (_, i) => `c${i + 1}`),
);
const configPath = join(dir, 'harness.config.json');
writeFileSync(configPath, JSON.stringify({ plugins: [] }));

function plainIo(): Io & { text: () => string } {
  let text = '';
  const out = { write: (chunk: string) => ((text += chunk), true) } as unknown as NodeJS.WriteStream;
  const id = (s: string) => s;
  return { out, err: out, c: new Proxy({}, { get: () => id }) as Io['c'], interactive: false, text: () => text };
}

describe(`a parent with ${K} subagents (and a grandchild)`, () => {
  it('is forked with its whole tree after one listing of the store', async () => {
    const list = vi.spyOn(FileJournalStore.prototype, 'list');
    const forked = await forkSession('parent', { dataDir, atSeq: parentLastSeq, id: 'fork' });
    await forked.journal.close();
    expect(forked.children.map((child) => [child.id, child.sourceId])).toEqual([
      ['fork.sub1', 'parent.sub1'],
      ['fork.sub1.sub1', 'parent.sub1.sub1'],
      ...Array.from({ length: K - 1 }, (_, i) => [`fork.sub${i + 2}`, `parent.sub${i + 2}`]),
    ]);
    expect(list).toHaveBeenCalledTimes(1);
  });

  it('harness replay prints every subagent where it ran, after one listing of the store', async () => {
    const list = vi.spyOn(FileJournalStore.prototype, 'list');
    const io = plainIo();
    expect(await replayCommand('parent', {}, { dataDir, config: configPath }, io)).toBe(0);
    const text = io.text();
    for (const answer of ['GRANDCHILD_OK', ...Array.from({ length: K }, (_, i) => `CHILD_${i + 1}_OK`), 'PARENT_DONE']) expect(text).toContain(answer);
    // Each child before its own call's result, the grandchild inside the first child.
    expect(text.indexOf('CHILD_1_OK')).toBeLessThan(text.indexOf('done c1'));
    expect(text.indexOf('GRANDCHILD_OK')).toBeLessThan(text.indexOf('CHILD_1_OK'));
    expect(list).toHaveBeenCalledTimes(1);
  });
});
