/**
 * Plugin reloads in the journal (issue 17 "dev", issue 19 "plugin reloads as marked events"): every
 * reload — ok or failed, between turns or in the middle of a streamed reply — is one ignorable
 * `plugin/reload` record in the open session, yielded by `run()` like every other event, and
 * nothing that reads a journal trips on it: the fold, `stateAt`, the recorded calls a cassette
 * serves, fork (inside and outside a turn), crash repair, the import of a journal, and a re-run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createHarness,
  foldEvents,
  forkSession,
  importJournal,
  openSession,
  readJournal,
  recordedCalls,
  stateAt,
  type AnySessionEvent,
  type ForwardedEvent,
  type Harness,
  type SessionEvent,
} from '../../runtime/index.ts';
import { runCassette } from '../../plugins/llm-replay/rerun.ts';
import { plugin, root, tempDir } from '../agent/support.ts';

const dir = tempDir('harness-plugin-reload-');
writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n'); // the plugin file is an ES module
const harnesses: Harness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.dispose();
});

const RUNTIME = JSON.stringify(join(root, 'runtime/index.ts'));
const notesSource = (tag: string) => `import { definePlugin, z } from ${RUNTIME};
export default definePlugin({ name: 'notes', config: z.object({ greeting: z.string().default('hello'), level: z.number().default(1) }), setup() { globalThis.__notesTag = ${JSON.stringify(tag)}; } });
`;

const LONG = 'The quick brown fox jumps over the lazy dog while the reload swaps the adapter underneath it.';

async function harnessWithNotes(dataDir: string): Promise<Harness> {
  const script = join(dir, 'script.json');
  writeFileSync(script, JSON.stringify({ replies: [{ when: { turn: 1 }, reply: { text: 'First answer.' } }, { reply: { text: LONG } }] }));
  const notes = join(dir, 'notes.ts');
  writeFileSync(notes, notesSource('v1'));
  const h = await createHarness({
    dataDir,
    config: {
      defaults: { provider: 'scripted', model: 'test' },
      plugins: [
        { module: plugin('llm-scripted'), config: { paceMs: 15, fragmentChars: 3, scripts: { test: script } } },
        { module: notes, config: { greeting: 'hello' } },
      ],
    },
  });
  harnesses.push(h);
  return h;
}

const reloads = (events: readonly AnySessionEvent[]) => events.filter((e): e is SessionEvent<'plugin/reload'> => e.type === 'plugin/reload');

describe('plugin/reload in the journal', { timeout: 120_000 }, () => {
  it('journals reloads between turns and mid-stream; run() yields them; every reader reads past them', async () => {
    const h = await harnessWithNotes(join(dir, 'data'));
    const session = await h.createSession({ cwd: dir });
    await session.runToEnd('one');

    // Between turns: a reload, a failed reload (the old generation keeps serving), a new config.
    await h.host.reload('notes');
    writeFileSync(join(dir, 'notes.ts'), `${notesSource('v3')}\nexport const broken = {{;\n`);
    await expect(h.host.reload('notes')).rejects.toMatchObject({ code: 'PLUGIN_IMPORT_FAILED' });
    writeFileSync(join(dir, 'notes.ts'), notesSource('v4'));
    await h.host.reload('notes', { config: { greeting: 'hi' } });

    // Mid-stream: the adapter itself is reloaded while its reply streams; the running call keeps
    // the generation it was prepared with and finishes whole.
    const seen: ForwardedEvent[] = [];
    let reloading: Promise<unknown> | undefined;
    for await (const event of session.run('two')) {
      seen.push(event);
      if (reloading === undefined && event.type === 'assistant/chunk' && event.data.chunk.type === 'text-delta') reloading = h.host.reload('llm-scripted');
    }
    await reloading;
    await session.close();

    const events: AnySessionEvent[] = [];
    for await (const event of readJournal(session.path)) events.push(event);
    const records = reloads(events);
    expect(records.map((r) => [r.data.action, r.data.outcome, r.data.name, r.data.generation])).toEqual([
      ['reload', 'ok', 'notes', 2],
      ['reload', 'failed', 'notes', 2],
      ['reload', 'ok', 'notes', 3],
      ['reload', 'ok', 'llm-scripted', 2],
    ]);
    const [ok, failed, withConfig, midStream] = records as [SessionEvent<'plugin/reload'>, SessionEvent<'plugin/reload'>, SessionEvent<'plugin/reload'>, SessionEvent<'plugin/reload'>];
    expect(ok.data).toMatchObject({ module: join(dir, 'notes.ts'), swapMs: expect.any(Number), reloadMs: expect.any(Number) });
    expect(ok.data.turn).toBeUndefined();
    expect(failed.data.failure).toMatchObject({ code: 'PLUGIN_IMPORT_FAILED' });
    expect(failed.data.failure!.message).toContain('notes.ts');
    expect(withConfig.data.configKeys).toEqual(['greeting']);
    expect(midStream.data).toMatchObject({ turn: 2, step: 1 });
    // Written ignorable, so an older reader skips it.
    const lines = readFileSync(session.path, 'utf8').trim().split('\n');
    for (const record of records) expect(JSON.parse(lines[record.seq]!)).toMatchObject({ type: 'plugin/reload', ignorable: true });

    // run() yielded it where it was journaled (what `run --json` prints equals the journal).
    const turn2 = events.filter((e) => e.seq >= seen[0]!.seq);
    expect(seen.map((e) => e.seq)).toEqual(turn2.map((e) => e.seq));
    expect(seen.find((e) => e.type === 'plugin/reload')).toEqual(midStream);

    // Mid-stream: chunks of the same call before and after it; the reply is whole.
    const chunksOf = (list: readonly AnySessionEvent[]) => list.filter((e) => e.type === 'assistant/chunk' && e.data.turn === 2 && e.data.step === 1);
    expect(chunksOf(events.slice(0, midStream.seq - 1)).length).toBeGreaterThan(0);
    expect(chunksOf(events.slice(midStream.seq)).length).toBeGreaterThan(0);
    const answer = events.filter((e) => e.type === 'assistant/message').at(-1) as SessionEvent<'assistant/message'>;
    expect(answer.data.message.content).toEqual([{ type: 'text', text: LONG }]);
    expect(events.filter((e) => e.type === 'turn/end').map((e) => (e as SessionEvent<'turn/end'>).data.reason)).toEqual(['completed', 'completed']);

    // The fold, stateAt and the recorded calls are what they are without the records.
    const without = events.filter((e) => e.type !== 'plugin/reload');
    expect(foldEvents(events)).toEqual(foldEvents(without));
    expect(stateAt(events, midStream.seq)).toEqual(stateAt(without, midStream.seq - 1));
    const calls = recordedCalls(events);
    expect(calls.map((c) => c.chunks)).toEqual(recordedCalls(without).map((c) => c.chunks));
    expect(calls).toHaveLength(2);
    const opened = await openSession(session.path, { events: true });
    expect(opened.interrupted).toBe(false);
    expect(opened.eventCount).toBe(events.length);

    // Fork: after a reload between turns is a valid point; the one mid-stream is inside a turn.
    const store = h.store;
    const atOk = await forkSession(session.path, { atSeq: ok.seq, store });
    await atOk.journal.close();
    expect(reloads(await all(atOk.journal.path)).map((r) => r.seq)).toEqual([ok.seq]);
    await expect(forkSession(session.path, { atSeq: midStream.seq, store })).rejects.toMatchObject({ code: 'FORK_INSIDE_TURN' });
    // … and closing the turn there (what crash repair appends) keeps the record and closes the turn.
    const cut = await forkSession(session.path, { atSeq: midStream.seq, store, closeOpenTurn: true });
    const cutState = cut.journal.state;
    await cut.journal.close();
    const cutEvents = await all(cut.journal.path);
    expect(cutEvents[midStream.seq - 1]).toEqual(midStream);
    expect(cutEvents.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 2, reason: 'interrupted' } });
    expect(cutState.openTurn).toBeUndefined();
    expect(cutState.pendingToolCalls).toEqual([]);

    // The import of a journal copies it record for record.
    const imported = await importJournal(session.path, { store: await freshStore() });
    expect(imported.lastSeq).toBe(events.length);

    // A re-run with the recording as the model: every call served and matching.
    const report = await runCassette(session.path, {
      config: {
        plugins: [
          { module: plugin('llm-scripted'), config: { scripts: { test: join(dir, 'script.json') } } },
          { module: join(dir, 'notes.ts'), config: { greeting: 'hi' } },
        ],
      },
      dataDir: join(dir, 'rerun'),
    });
    expect(report.divergences).toEqual([]);
    expect(report.same).toBe(true);
    expect(report.calls.served).toBe(2);
  });

  it('journals nothing into a child session, and nothing once a session is closed', async () => {
    const h = await harnessWithNotes(join(dir, 'data2'));
    const parent = await h.createSession({ cwd: dir });
    const child = await h.createSession({ cwd: dir, parentSession: { sessionId: parent.id, depth: 1 } });
    const closed = await h.createSession({ cwd: dir });
    await closed.close();
    await h.host.reload('notes');
    await parent.close();
    await child.close();
    expect(reloads(await all(parent.path))).toHaveLength(1);
    expect(reloads(await all(child.path))).toHaveLength(0);
    expect(await all(closed.path)).toEqual([]);
  });
});

async function all(path: string): Promise<AnySessionEvent[]> {
  const out: AnySessionEvent[] = [];
  for await (const event of readJournal(path)) out.push(event);
  return out;
}

async function freshStore() {
  const h = await createHarness({ dataDir: join(dir, `import-${Math.random().toString(36).slice(2)}`), config: { plugins: [] } });
  harnesses.push(h);
  return h.store;
}
