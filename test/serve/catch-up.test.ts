/**
 * An SSE client far behind (more than the 50 000 events a stream may queue) catches up in one
 * connection on a PostgreSQL store (a real server, test/support/postgres.ts): the server reads the
 * store in pages as the client's socket takes them, so what it holds for the client stays bounded
 * however long the session; a client that takes nothing at all is still cut off.
 */
import { request, type IncomingMessage } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJournal } from '../../runtime/internal.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { serve, TOKEN, type Served } from './support.ts';

/** More than twice the stream's queue bound (50 000): a client from 0 is far behind. */
const EVENTS = 120_000;
const TITLE = 'x'.repeat(400);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapAfterGc = (): number => {
  gc();
  return process.memoryUsage().heapUsed;
};

let pg: TestPostgres;
let s: Served;
/** Page queries of events run through the store's pool. */
let pageQueries = 0;
let id: string;

beforeAll(async () => {
  pg = await startPostgres();
  s = await serve({ streamStallTimeoutMs: 1000 }, { store: await pg.createDatabase('catch_up') });
  const store = s.harness.store as unknown as { query(text: string, values: unknown[]): Promise<unknown> };
  const query = store.query.bind(store);
  store.query = (text, values) => {
    if (text.includes('FROM harness_events WHERE session_id')) pageQueries++;
    return query(text, values);
  };
  // Written through the journal's writer directly (no model, no turn): fast.
  const journal = await createJournal({ store: s.harness.store, id: 'far-behind' });
  for (let i = 1; i <= EVENTS; i++) {
    journal.append('session/title', { title: `${i} ${TITLE}` });
    if (i % 5000 === 0) await journal.checkpoint();
  }
  await journal.close();
  id = journal.id;
}, 180_000);

afterAll(async () => {
  await s?.close();
  await pg?.stop();
});

/** Opens the session's SSE stream paused: the test decides when its bytes are read. */
function connect(): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${s.server.url}/v1/sessions/${id}/stream`);
    const req = request(url, { headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' } }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end();
  });
}

async function eventually(check: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !check(); i++) await new Promise((r) => setTimeout(r, 50));
  expect(check()).toBe(true);
}

/** Waits until the store's page reads have not moved for a while (the server stopped reading ahead). */
async function readsSettle(): Promise<void> {
  let last = -1;
  let still = 0;
  while (still < 8) {
    await new Promise((r) => setTimeout(r, 100));
    still = pageQueries === last ? still + 1 : 0;
    last = pageQueries;
  }
}

describe('SSE catch-up from far behind', { timeout: 180_000 }, () => {
  it(`a client ${EVENTS.toLocaleString('en')} events behind reads all of them in one connection, with contiguous ids, and the server's heap stays bounded`, async () => {
    const baseline = heapAfterGc();
    const res = await connect();
    expect(res.statusCode).toBe(200);
    // Not read yet: the server must wait for the socket, not read the session ahead into memory.
    await readsSettle();
    const heldWhilePaused = heapAfterGc() - baseline;
    const samples: number[] = [heldWhilePaused];
    let ended = false;
    res.on('end', () => (ended = true));
    res.setEncoding('utf8');
    let buffer = '';
    let lastId = 0;
    let broken: string | undefined;
    await new Promise<void>((resolve, reject) => {
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        for (end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!frame.startsWith('id: ')) continue;
          const newline = frame.indexOf('\n');
          const seq = Number(frame.slice(4, newline));
          if (seq !== lastId + 1 || JSON.parse(frame.slice(newline + 7)).seq !== seq) broken ??= `frame ${seq} after ${lastId}`;
          lastId = seq;
          if (seq % 20_000 === 0) samples.push(heapAfterGc() - baseline);
          if (seq === EVENTS) resolve();
        }
      });
      res.on('close', () => (lastId === EVENTS ? resolve() : reject(new Error(`the stream closed after ${lastId} of ${EVENTS} events`))));
      res.on('error', reject);
      res.resume();
    });
    res.destroy();
    expect(broken).toBeUndefined();
    expect(lastId).toBe(EVENTS);
    expect(ended).toBe(false);
    // The whole session is ~60 MB of frames; the server holds a page of it at a time.
    expect(Math.max(...samples)).toBeLessThan(24 * 1024 * 1024);
  });

  it('a client that takes no bytes at all is cut off once its socket has not drained for streamStallTimeoutMs', async () => {
    const res = await connect();
    expect(res.statusCode).toBe(200);
    expect(s.server.turns.subscriberCount(id)).toBe(1);
    // Never read: the socket fills, and the server drops the stream after the stall timeout (1 s here).
    await eventually(() => s.server.turns.subscriberCount(id) === 0);
    res.destroy();
  });
});
