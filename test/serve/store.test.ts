/**
 * `harness serve` on the harness's store (issue 18, 4): sessions in PostgreSQL end to end over
 * HTTP — create, a turn whose approval is answered over HTTP, events, state, the SSE stream — and
 * two servers sharing one database: a stream opened on one follows the turn the other runs, and
 * resumed with Last-Event-ID it sees every event exactly once. A store that cannot serve (no
 * lease, no live tail) is refused with STORE_UNSUPPORTED naming it. A real server
 * (test/support/postgres.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, FileJournalStore, readJournal, storeSource, type AnySessionEvent, type JournalStore } from '../../runtime/index.ts';
import { TurnService } from '../../plugins/serve/index.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { createJournal } from '../../runtime/internal.ts';
import { tempDir } from '../agent/support.ts';
import { openStream, readUntil, serve, type Served } from './support.ts';

let pg: TestPostgres;
let url: string;
let a: Served;
let b: Served;

beforeAll(async () => {
  pg = await startPostgres();
  url = await pg.createDatabase('serve');
  a = await serve({ approvalPolicy: 'read-only' }, { paceMs: 3, store: url });
  b = await serve({}, { paceMs: 3, store: url });
}, 60_000);

afterAll(async () => {
  await a?.close();
  await b?.close();
  await pg?.stop();
});

async function stored(id: string): Promise<AnySessionEvent[]> {
  const out: AnySessionEvent[] = [];
  for await (const event of readJournal(storeSource(a.harness.store, id))) out.push(event);
  return out;
}

describe('serve on a PostgreSQL store', { timeout: 60_000 }, () => {
  it('creates a session, runs a turn whose approval is answered over HTTP, and serves its events, state and stream', async () => {
    expect(a.harness.store.kind).toBe('postgres');
    const created = await a.api('POST', '/v1/sessions', { title: 'on postgres' });
    expect(created.status).toBe(201);
    const id = created.body.session.id as string;
    expect((await a.api('GET', '/v1/sessions')).body.sessions.map((s: { id: string }) => s.id)).toContain(id);

    const stream = openStream(`${a.server.url}/v1/sessions/${id}/stream`);
    const submitted = await a.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'poke it' });
    expect(submitted.status).toBe(202);
    const seen: AnySessionEvent[] = [];
    for (let next = await stream.frames.next(); !next.done; next = await stream.frames.next()) {
      const event = JSON.parse(next.value.data) as AnySessionEvent;
      expect(next.value.id).toBe(String(event.seq));
      seen.push(event);
      if (event.type === 'approval/requested') {
        const callId = (event.data as { callId: string }).callId;
        expect((await a.api('POST', `/v1/sessions/${id}/approvals/${callId}`, { decision: 'allow' })).status).toBe(200);
        expect((await a.api('POST', `/v1/sessions/${id}/approvals/${callId}`, { decision: 'deny' })).status).toBe(409);
      }
      if (event.type === 'turn/end') break;
    }
    stream.close();
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    expect(seen.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } });
    expect(a.ran).toEqual(['poke:k=v']);

    expect(await stored(id)).toEqual(seen);
    expect((await a.api('GET', `/v1/sessions/${id}/events?after=2&limit=3`)).body.events).toEqual(seen.slice(2, 5));
    const state = (await a.api('GET', `/v1/sessions/${id}/state`)).body;
    expect(state.seq).toBe(seen.length);
    expect(state.state.turnCount).toBe(1);
    expect((await a.api('GET', `/v1/sessions/${id}`)).body.session).toMatchObject({ id, title: 'on postgres', turnCount: 1, lastSeq: seen.length });
    expect((await a.api('GET', '/v1/sessions/nope/stream')).status).toBe(404);
  });

  it('follows on one server the turn another runs, and a stream resumed with Last-Event-ID sees every event once', async () => {
    const id = (await a.api('POST', '/v1/sessions', {})).body.session.id as string;
    // Opened on B before the turn starts on A: B's stream can only hear of it through the store.
    const first = openStream(`${b.server.url}/v1/sessions/${id}/stream`);
    expect((await a.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long one' })).status).toBe(202);
    const head = await readUntil(first.frames, (e) => e.type === 'assistant/chunk' && e.seq >= 12);
    first.close();
    const resumed = openStream(`${b.server.url}/v1/sessions/${id}/stream`, { lastEventId: String(head.at(-1)!.seq) });
    const tail = await readUntil(resumed.frames, (e) => e.type === 'turn/end');
    resumed.close();
    const seen = [...head, ...tail];
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    expect(seen).toEqual(await stored(id));
    // The turn is A's: B runs nothing, and the next turn can be B's.
    expect((await b.api('GET', `/v1/sessions/${id}`)).body.session.runningTurn).toBeUndefined();
    const next = await b.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'hello again' });
    expect(next.status).toBe(202);
    expect(next.body.turn).toMatchObject({ turn: 2, startSeq: seen.length + 1 });
    await b.server.turns.turnEnd(id, 2);
    expect((await stored(id)).filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: string }).reason)).toEqual(['completed', 'completed']);
  });

  it("shows a turn another server runs as running in this server's list and session (the writer's lease in the store, not this process's memory), and not once it ended", async () => {
    const id = (await a.api('POST', '/v1/sessions', { title: 'running elsewhere' })).body.session.id as string;
    const listed = async (served: Served): Promise<unknown> => (await served.api('GET', '/v1/sessions')).body.sessions.find((s: { id: string }) => s.id === id).runningTurn;
    const stream = openStream(`${a.server.url}/v1/sessions/${id}/stream`);
    // A's policy asks about the write tool: the turn waits on A for an answer, running.
    const submitted = await a.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'poke it' });
    expect(submitted.status).toBe(202);
    const asked = await readUntil(stream.frames, (e) => e.type === 'approval/requested');
    const startSeq = submitted.body.turn.startSeq as number;
    expect(await listed(b)).toEqual({ turn: 1, startSeq, runsHere: false });
    expect(await listed(a)).toEqual({ turn: 1, startSeq, runsHere: true });
    expect((await b.api('GET', `/v1/sessions/${id}`)).body.session.runningTurn).toEqual({ turn: 1, startSeq, runsHere: false });

    const callId = (asked.at(-1)!.data as { callId: string }).callId;
    expect((await a.api('POST', `/v1/sessions/${id}/approvals/${callId}`, { decision: 'allow' })).status).toBe(200);
    await readUntil(stream.frames, (e) => e.type === 'turn/end');
    stream.close();
    await a.server.turns.turnEnd(id, 1);
    expect(await listed(a)).toBeUndefined();
    expect(await listed(b)).toBeUndefined();
    expect((await b.api('GET', `/v1/sessions/${id}`)).body.session.runningTurn).toBeUndefined();
  });

  it('a turn whose writer died is not running anywhere (its turn is open in the store, its lease is gone)', async () => {
    const journal = await createJournal({ store: a.harness.store, id: 'writer-died' });
    journal.append('turn/start', { turn: 1 });
    await journal.close(); // the lease ends with the writer; the turn stays open until the next open closes it
    const summary = (await b.harness.store.list()).find((s) => s.id === 'writer-died');
    expect(summary?.openTurn).toEqual({ turn: 1, startSeq: 1 });
    expect((await b.api('GET', '/v1/sessions')).body.sessions.find((s: { id: string }) => s.id === 'writer-died').runningTurn).toBeUndefined();
    expect((await b.api('GET', '/v1/sessions/writer-died')).body.session.runningTurn).toBeUndefined();
  });

  it('refuses a store that cannot serve (no writer lease, no live tail) with STORE_UNSUPPORTED naming it', async () => {
    const dir = tempDir('harness-serve-store-');
    const file = new FileJournalStore({ dataDir: dir });
    // A store that only archives: it reads and lists, but takes no writer lease and has no live tail.
    const readOnly = {
      kind: 'archive',
      location: 's3://bucket/sessions',
      atomicWrites: true,
      create: file.create.bind(file),
      read: file.read.bind(file),
      list: file.list.bind(file),
      locationOf: (id: string) => `s3://bucket/sessions/${id}`,
      close: file.close.bind(file),
    } as Partial<JournalStore> as JournalStore;
    const harness = await createHarness({ config: { plugins: [] }, store: readOnly });
    try {
      expect(() => new TurnService(harness)).toThrow(expect.objectContaining({ code: 'STORE_UNSUPPORTED', message: expect.stringContaining('archive store s3://bucket/sessions') }));
      expect(() => new TurnService(harness)).toThrow(/no lease, tail/);
    } finally {
      await harness.dispose();
    }
  });
});
