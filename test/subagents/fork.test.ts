/** A fork of a parent includes its subagents (those spawned and answered by the fork point). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCassette } from '../../plugins/llm-replay/index.ts';
import { forkSession, listChildSessions, type AnySessionEvent, type Harness } from '../../runtime/index.ts';
import { delegation, ofType, readAll, subagentHarness } from './support.ts';

let h: (Harness & { dir: string }) | undefined;
let parentId: string;
let events: AnySessionEvent[];

beforeAll(async () => {
  h = await subagentHarness(delegation);
  const parent = await h.createSession({ cwd: h.dir });
  await parent.prompt('delegate this', { approve: () => 'allow' });
  parentId = parent.id;
  await parent.close();
  events = (await readAll(parent.path)).events;
});
afterAll(async () => {
  await h?.dispose();
});

describe('fork of a parent', () => {
  it('forks the child with it, linked to the fork, its events copied', async () => {
    const forked = await forkSession(parentId, { atSeq: events.length, store: h!.store, id: 'fork-all' });
    await forked.journal.close();
    expect(forked.children.map((c) => [c.id, c.sourceId])).toEqual([['fork-all.sub1', `${parentId}.sub1`]]);
    const source = await readAll(`${h!.dataDir}/sessions/${parentId}.sub1.jsonl`);
    const child = await readAll(forked.children[0]!.path);
    expect(child.header.parentSession).toEqual({ sessionId: 'fork-all', callId: source.header.parentSession!.callId, depth: 1 });
    expect(child.header.parent).toEqual({ sessionId: `${parentId}.sub1`, seq: source.events.length });
    expect(child.events).toEqual(source.events);
    expect((await listChildSessions('fork-all', h!.store)).map((s) => s.id)).toEqual(['fork-all.sub1']);
    // The fork re-runs as a cassette with its child.
    const report = await runCassette(forked.journal.path, { config: h!.config, approve: 'allow-all' });
    expect(report.divergences).toEqual([]);
    expect(report.subagents).toEqual({ recorded: 1, rerun: 1 });
  });

  it('leaves out a child whose spawning call had no result yet at the fork point', async () => {
    const resultSeq = ofType(events, 'tool/result')[0]!.seq;
    const forked = await forkSession(parentId, { atSeq: resultSeq - 1, store: h!.store, id: 'fork-before', closeOpenTurn: true });
    await forked.journal.close();
    expect(forked.children).toEqual([]);
    expect(await listChildSessions('fork-before', h!.store)).toEqual([]);
  });
});
