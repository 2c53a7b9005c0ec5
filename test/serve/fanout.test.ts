/**
 * What `harness serve` asks of a PostgreSQL store (a real server, test/support/postgres.ts), counted
 * on the store's read path (its SQL queries and its live tails):
 * - N SSE subscribers of one session cause one live tail of the store, not one each: the queries
 *   of events grow with the committed batches, not with the subscribers; every subscriber sees
 *   every stored event exactly once; a late one from seq 0 catches up on a read of the store of
 *   its own (no second tail) and then joins; the shared tail stops after the last subscriber.
 * - a subscriber that does not read is disconnected past its bound without slowing the others, and
 *   resumes from the last seq it read, exactly once;
 * - `GET /v1/sessions` is the same queries however many sessions there are.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJournal, storeSource, type AnySessionEvent, type JournalLine, type SessionWrittenBatch } from '../../runtime/index.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { type Frame, openStream, serve, type Served } from './support.ts';

const SUBSCRIBERS = 20;

let pg: TestPostgres;
let s: Served;
/** SQL run through the store's pool (reads, tails, lists; not the writer's lease connection). */
const queries: string[] = [];
let tailCalls = 0;
let activeTails = 0;
/** Batches this process committed, per session. */
const written = new Map<string, number>();

beforeAll(async () => {
  pg = await startPostgres();
  s = await serve({ approvalPolicy: 'allow-all' }, { paceMs: 3, store: await pg.createDatabase('fanout') });
  const store = s.harness.store as unknown as {
    query(text: string, values: unknown[]): Promise<unknown>;
    tail(id: string, options: unknown): AsyncGenerator<readonly JournalLine[]>;
  };
  const query = store.query.bind(store);
  store.query = (text, values) => {
    queries.push(text);
    return query(text, values);
  };
  const tail = store.tail.bind(store);
  store.tail = async function* (id, options) {
    tailCalls++;
    activeTails++;
    try {
      yield* tail(id, options);
    } finally {
      activeTails--;
    }
  };
  s.harness.kernel.bus.add('session/written', (batch: SessionWrittenBatch) => void written.set(batch.sessionId, (written.get(batch.sessionId) ?? 0) + 1), { owner: 'test' });
}, 60_000);

afterAll(async () => {
  await s?.close();
  await pg?.stop();
});

const eventQueries = (): number => queries.filter((q) => q.includes('FROM harness_events WHERE session_id')).length;

async function stored(id: string): Promise<AnySessionEvent[]> {
  const out: AnySessionEvent[] = [];
  for await (const event of readJournal(storeSource(s.harness.store, id))) out.push(event);
  return out;
}

async function eventually(check: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !check(); i++) await new Promise((r) => setTimeout(r, 50));
  expect(check()).toBe(true);
}

/** Reads frames until `until` (inclusive), leaving the stream open for more (unlike a for-await's break). */
async function readUntil(frames: AsyncGenerator<Frame>, until: (event: AnySessionEvent) => boolean): Promise<AnySessionEvent[]> {
  const out: AnySessionEvent[] = [];
  for (let next = await frames.next(); !next.done; next = await frames.next()) {
    const event = JSON.parse(next.value.data) as AnySessionEvent;
    expect(next.value.id).toBe(String(event.seq));
    out.push(event);
    if (until(event)) return out;
  }
  return out;
}

const turnEnd = (turn: number) => (event: AnySessionEvent) => event.type === 'turn/end' && (event.data as { turn: number }).turn === turn;

describe('SSE fan-out on PostgreSQL', { timeout: 120_000 }, () => {
  it('N subscribers of one session share one store tail, and each sees every event exactly once', async () => {
    // A titled session: the subscribers start past its first event, so a subscriber from 0 is behind the shared tail.
    const id = (await s.api('POST', '/v1/sessions', { title: 'fan-out' })).body.session.id as string;
    const lastSeq = (await s.api('GET', `/v1/sessions/${id}`)).body.session.lastSeq as number;
    expect(lastSeq).toBeGreaterThan(0);
    const streams = Array.from({ length: SUBSCRIBERS }, () => openStream(`${s.server.url}/v1/sessions/${id}/stream`, { lastEventId: String(lastSeq) }));
    try {
      const reading = streams.map((stream) => readUntil(stream.frames, turnEnd(1)));
      await eventually(() => s.server.turns.subscriberCount(id) === SUBSCRIBERS && s.server.turns.catchingUpCount(id) === 0);
      expect(s.server.turns.tailCount).toBe(1);
      expect(tailCalls).toBe(1);
      queries.length = 0;
      written.set(id, 0);
      expect((await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long answer' })).status).toBe(202);
      const seen = await Promise.all(reading);

      const events = await stored(id);
      for (const got of seen) expect(got).toEqual(events.slice(lastSeq));
      // One tail: its queries follow the batches (one a notification, a few for polls), not N × batches.
      const batches = written.get(id)!;
      expect(batches).toBeGreaterThan(2);
      expect(tailCalls).toBe(1);
      expect(eventQueries()).toBeLessThanOrEqual(2 * batches + 4);

      // A late subscriber from seq 0 catches up on a read of the store of its own, then joins the shared tail.
      const late = openStream(`${s.server.url}/v1/sessions/${id}/stream`);
      const lateSeen = await readUntil(late.frames, turnEnd(1));
      expect(lateSeen).toEqual(events);
      await eventually(() => s.server.turns.catchingUpCount(id) === 0);
      expect(tailCalls).toBe(1);
      expect(activeTails).toBe(1);
      // The next turn reaches all of them through the shared tail, once each.
      const next = [...streams, late].map((stream) => readUntil(stream.frames, turnEnd(2)));
      expect((await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a second one' })).status).toBe(202);
      const nextSeen = await Promise.all(next);
      const after = await stored(id);
      for (const got of nextSeen) expect(got).toEqual(after.slice(events.length));
      expect(tailCalls).toBe(1);
      late.close();
    } finally {
      for (const stream of streams) stream.close();
    }
    // Stopped after the last subscriber.
    await eventually(() => s.server.turns.subscriberCount(id) === 0 && s.server.turns.tailCount === 0 && activeTails === 0);
  });

  it('a subscriber that does not read is disconnected past its bound, the others and the turn go on, and it resumes exactly once', async () => {
    const turns = s.server.turns;
    const { id } = await turns.createSession({});
    const slow = turns.events(id, { maxQueued: 10 });
    const fast = turns.events(id);
    const seen: AnySessionEvent[] = [];
    const reading = (async () => {
      for await (const event of fast) {
        seen.push(event);
        if (turnEnd(1)(event)) break;
      }
    })();
    await turns.submitTurn(id, { prompt: 'a long answer' });
    await reading;
    expect((await turns.turnEnd(id, 1))?.data.reason).toBe('completed');
    const events = await stored(id);
    expect(seen).toEqual(events);
    // The slow one was closed (not left to grow), after the events it held.
    expect(slow.overflowed).toBe(true);
    expect(slow.isClosed).toBe(true);
    const held: AnySessionEvent[] = [];
    for await (const event of slow) held.push(event);
    expect(held).toEqual([]);
    // Subscribing again from the last seq it read (none): every event, once.
    const resumed: AnySessionEvent[] = [];
    for await (const event of turns.events(id, { after: 0 })) {
      resumed.push(event);
      if (turnEnd(1)(event)) break;
    }
    expect(resumed).toEqual(events);
  });

  it('a store tail that fails closes its streams (they reconnect) and says so as a SERVE_TAIL_FAILED warning; the next subscriber starts a new tail', async () => {
    const turns = s.server.turns;
    const { id } = await turns.createSession({ title: 'failing tail' });
    const store = s.harness.store as unknown as { tail: (...args: unknown[]) => AsyncGenerator<readonly JournalLine[]> };
    const tail = store.tail;
    const diagnostics: { code: string; message: string }[] = [];
    const remove = s.harness.kernel.bus.add('kernel/diagnostic', (d: { code: string; message: string }) => void diagnostics.push(d), { owner: 'test' });
    store.tail = async function* () {
      yield* [];
      throw new Error('connection terminated unexpectedly');
    };
    try {
      const events = turns.events(id);
      const got: AnySessionEvent[] = [];
      for await (const event of events) got.push(event);
      expect(events.isClosed).toBe(true);
      expect(diagnostics.filter((d) => d.code === 'SERVE_TAIL_FAILED')).toEqual([expect.objectContaining({ message: expect.stringContaining(`Session ${id}`) })]);
      expect(turns.tailCount).toBe(0);
    } finally {
      store.tail = tail;
      remove();
    }
    const again: AnySessionEvent[] = [];
    for await (const event of turns.events(id)) {
      again.push(event);
      break;
    }
    expect(again.map((e) => e.type)).toEqual(['session/title']);
  });

  it('GET /v1/sessions runs the same queries for 2 sessions as for 8 (no query per session)', async () => {
    const list = async (): Promise<string[]> => {
      queries.length = 0;
      const response = await s.api('GET', '/v1/sessions');
      expect(response.status).toBe(200);
      return [...queries];
    };
    for (let i = 0; i < 2; i++) await s.api('POST', '/v1/sessions', { title: `listed ${i}` });
    const few = await list();
    for (let i = 0; i < 6; i++) await s.api('POST', '/v1/sessions', { title: `more ${i}` });
    const many = await list();
    expect((await s.api('GET', '/v1/sessions')).body.sessions.length).toBeGreaterThanOrEqual(8);
    expect(many).toEqual(few);
    expect(many.length).toBeLessThanOrEqual(2);
  });
});
