/**
 * `harness serve` over real HTTP on 127.0.0.1 (plugins/serve): auth, errors with stable codes, body
 * limits, turns, approvals answered over HTTP exactly once, abort, and the SSE stream resumed with
 * Last-Event-ID.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJournal, type AnySessionEvent } from '../../runtime/index.ts';
import { journalPath } from '../../runtime/internal.ts';
import { openStream, readUntil, serve, TOKEN, type Served } from './support.ts';

let s: Served;
beforeAll(async () => {
  s = await serve({ maxBodyBytes: 4096 }, { paceMs: 4 });
});
afterAll(async () => {
  await s?.close();
});

const newSession = async (): Promise<string> => {
  const created = await s.api('POST', '/v1/sessions', {});
  expect(created.status).toBe(201);
  return created.body.session.id as string;
};

const journalEvents = async (id: string): Promise<AnySessionEvent[]> => {
  const out: AnySessionEvent[] = [];
  for await (const event of readJournal(journalPath(id, s.harness.dataDir))) out.push(event);
  return out;
};

/** Waits until `check` returns something (polling the API), or fails after `ms`. */
async function eventually<T>(check: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('auth and errors', () => {
  it('answers 401 UNAUTHORIZED without a token and with a wrong one, never echoing it', async () => {
    const none = await s.api('GET', '/v1/sessions', undefined, { token: null });
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHORIZED');
    const wrong = await s.api('GET', '/v1/sessions', undefined, { token: 'not-the-token-but-long-enough' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('UNAUTHORIZED');
    expect(wrong.text).not.toContain('not-the-token');
    expect(wrong.text).not.toContain(TOKEN);
    // The stream is guarded too; health is not.
    expect((await s.api('GET', `/v1/sessions/x/stream`, undefined, { token: null })).status).toBe(401);
    expect((await s.api('GET', '/v1/health', undefined, { token: null })).status).toBe(200);
  });

  it('answers 404 SESSION_NOT_FOUND for an unknown session on every route, 400 for an id that is not one', async () => {
    for (const [method, path, body] of [
      ['GET', '/v1/sessions/nope'],
      ['GET', '/v1/sessions/nope/events'],
      ['GET', '/v1/sessions/nope/state'],
      ['POST', '/v1/sessions/nope/turns', { prompt: 'hi' }],
      ['POST', '/v1/sessions/nope/abort'],
      ['POST', '/v1/sessions/nope/approvals/c1', { decision: 'allow' }],
      ['GET', '/v1/sessions/nope/stream'],
    ] as const) {
      const response = await s.api(method, path, body);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.error.code, `${method} ${path}`).toBe('SESSION_NOT_FOUND');
    }
    const bad = await s.api('GET', `/v1/sessions/${encodeURIComponent('../etc')}/events`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_SESSION_ID');
    const route = await s.api('GET', '/v2/nothing');
    expect(route.status).toBe(404);
    expect(route.body.error.code).toBe('NOT_FOUND');
  });

  it('answers 413 BODY_TOO_LARGE for a body over the limit, and 400 INVALID_REQUEST for a bad one', async () => {
    const id = await newSession();
    const big = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'x'.repeat(5000) });
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('BODY_TOO_LARGE');
    expect(big.text).not.toContain('xxxxxxxx');
    const missing = await s.api('POST', `/v1/sessions/${id}/turns`, {});
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('INVALID_REQUEST');
    const extra = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'hi', tools: ['rm'] });
    expect(extra.status).toBe(400);
    expect(extra.body.error.code).toBe('INVALID_REQUEST');
    expect(extra.body.error.message).toBe('Invalid request: body has an unknown key "tools" (it takes "prompt", "provider", "model", "reasoningEffort", "approve").');
    const misspelt = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'x', promt: 'y' });
    expect(misspelt.status).toBe(400);
    expect(misspelt.body.error).toEqual({ code: 'INVALID_REQUEST', message: 'Invalid request: body has an unknown key "promt" (did you mean "prompt"?).' });
    const notJson = await s.api('POST', `/v1/sessions/${id}/turns`, undefined, { raw: '{"prompt":' });
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('INVALID_REQUEST');
    const empty = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: '  ' });
    expect(empty.status).toBe(400);
    expect(empty.body.error.code).toBe('EMPTY_PROMPT');
    const policy = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'hi', approve: 'yolo' });
    expect(policy.status).toBe(400);
    expect(policy.body.error.code).toBe('UNKNOWN_POLICY');
    // Nothing of the refused requests was journaled.
    expect((await journalEvents(id)).length).toBe(0);
  });

  it('answers 400 UNKNOWN_PROVIDER for a provider no adapter serves, naming it and the known ones, and journals nothing', async () => {
    const id = await newSession();
    const unknown = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'x', provider: 'nope' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('UNKNOWN_PROVIDER');
    expect(unknown.body.error.message).toContain('provider "nope"');
    expect(unknown.body.error.message).toContain('Known providers: scripted.');
    expect((await journalEvents(id)).length).toBe(0);
    // A model alone is still resolved with the config's default provider, and a known provider runs.
    const modelOnly = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'x', model: 'test' });
    expect(modelOnly.status).toBe(202);
    expect((await s.server.turns.turnEnd(id))?.data.reason).toBe('completed');
    const known = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'x', provider: 'scripted', model: 'test' });
    expect(known.status).toBe(202);
    expect((await s.server.turns.turnEnd(id))?.data.reason).toBe('completed');
  });
});

describe('finding the API', () => {
  it('GET /v1 answers a JSON index of the routes and the doc; a route that is not one names both', async () => {
    const index = await s.api('GET', '/v1');
    expect(index.status).toBe(200);
    expect(index.body.api).toBe('v1');
    expect(index.body.docs).toBe('cookbook/serve.md (in the harness-runtime package and its repository)');
    expect(index.body.routes).toEqual(
      expect.arrayContaining([
        'GET /v1/health',
        'GET /v1/sessions',
        'POST /v1/sessions',
        'GET /v1/sessions/:id',
        'GET /v1/sessions/:id/events',
        'POST /v1/sessions/:id/turns',
        'POST /v1/sessions/:id/approvals/:callId',
        'GET /v1/sessions/:id/stream',
      ]),
    );
    expect(index.body.routes).not.toContain('HEAD /v1/health');
    expect((await s.api('GET', '/v1/')).body.routes).toEqual(index.body.routes);
    // Under /v1, so it needs the token like the rest.
    expect((await s.api('GET', '/v1', undefined, { token: null })).status).toBe(401);
    const missing = await s.api('GET', '/v1/nothing');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toEqual({ code: 'NOT_FOUND', message: 'No route GET /v1/nothing; GET /v1 lists the routes of the API, and cookbook/serve.md documents them.' });
  });

  it('GET / redirects to the viewer with a Location and a body that says where the viewer and the API are', async () => {
    for (const token of [undefined, null]) {
      const response = await fetch(`${s.server.url}/`, { redirect: 'manual', headers: token === null ? {} : { authorization: `Bearer ${TOKEN}` } });
      expect(response.status).toBe(302);
      expect(response.headers.get('location')).toBe('/viewer/');
      expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await response.text()).toBe('The session viewer is at /viewer/; the HTTP API is under /v1 (GET /v1 lists its routes).\n');
    }
  });
});

describe('request bodies are not coerced', () => {
  it('refuses a prompt that is not a string — a number, a boolean, null, an array, an object — with one 400 INVALID_REQUEST, journaling nothing', async () => {
    const id = await newSession();
    for (const prompt of [5, true, false, null, ['a', 'b'], { text: 'a' }]) {
      const refused = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt });
      expect(refused.status, JSON.stringify(prompt)).toBe(400);
      expect(refused.body.error, JSON.stringify(prompt)).toEqual({ code: 'INVALID_REQUEST', message: 'Invalid request: body/prompt must be string.' });
    }
    expect((await journalEvents(id)).length).toBe(0);
  });

  it("refuses the other bodies' non-strings too (a turn's model, a session's id, an approval's reason), while a query's digits are still numbers", async () => {
    const id = await newSession();
    const model = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'hi', model: 5 });
    expect(model.status).toBe(400);
    expect(model.body.error).toEqual({ code: 'INVALID_REQUEST', message: 'Invalid request: body/model must be string.' });
    const session = await s.api('POST', '/v1/sessions', { id: 12345 });
    expect(session.status).toBe(400);
    expect(session.body.error).toEqual({ code: 'INVALID_REQUEST', message: 'Invalid request: body/id must be string.' });
    const reason = await s.api('POST', `/v1/sessions/${id}/approvals/call-1`, { decision: 'deny', reason: 5 });
    expect(reason.status).toBe(400);
    expect(reason.body.error).toEqual({ code: 'INVALID_REQUEST', message: 'Invalid request: body/reason must be string.' });
    const events = await s.api('GET', `/v1/sessions/${id}/events?after=0&limit=5`);
    expect(events.status).toBe(200);
    const notSeq = await s.api('GET', `/v1/sessions/${id}/events?after=x`);
    expect(notSeq.status).toBe(400);
    expect(notSeq.body.error.code).toBe('INVALID_REQUEST');
    expect((await journalEvents(id)).length).toBe(0);
  });
});

describe('sessions and turns', () => {
  it('creates and lists sessions, runs a turn, reads events by seq range and the state at a seq', async () => {
    const created = await s.api('POST', '/v1/sessions', { title: 'greeting' });
    expect(created.status).toBe(201);
    const id = created.body.session.id as string;
    expect(created.body.session).toMatchObject({ id, title: 'greeting', turnCount: 0, lastSeq: 1 });
    const again = await s.api('POST', '/v1/sessions', { id });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('JOURNAL_EXISTS');
    const listed = await s.api('GET', '/v1/sessions');
    expect(listed.body.sessions.map((x: { id: string }) => x.id)).toContain(id);
    expect(JSON.stringify(listed.body)).not.toContain(s.harness.dataDir); // no server paths

    const submitted = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'say hello' });
    expect(submitted.status).toBe(202);
    expect(submitted.body.turn).toMatchObject({ sessionId: id, turn: 1, startSeq: 2 });
    expect((await s.server.turns.turnEnd(id, 1))?.data.reason).toBe('completed');
    const all = await eventually(async () => {
      const r = await s.api('GET', `/v1/sessions/${id}/events`);
      return r.body.events.at(-1)?.type === 'turn/end' ? (r.body.events as AnySessionEvent[]) : undefined;
    });
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all).toEqual(await journalEvents(id));
    const range = await s.api('GET', `/v1/sessions/${id}/events?after=2&to=5`);
    expect(range.body.events.map((e: AnySessionEvent) => e.seq)).toEqual([3, 4, 5]);
    const limited = await s.api('GET', `/v1/sessions/${id}/events?after=0&limit=2`);
    expect(limited.body).toMatchObject({ more: true });
    expect(limited.body.events).toHaveLength(2);
    const userSeq = all.find((e) => e.type === 'user/message')!.seq;
    const at = await s.api('GET', `/v1/sessions/${id}/state?at=${userSeq}`);
    expect(at.body.seq).toBe(userSeq);
    expect(at.body.state.messages).toHaveLength(1);
    expect(at.body.state.openTurn).toMatchObject({ turn: 1 });
    const last = await s.api('GET', `/v1/sessions/${id}/state`);
    expect(last.body.state.messages.at(-1).content[0].text).toBe('Hello from the scripted model.');
    expect(last.body.state.lastTurnEnd).toEqual({ turn: 1, reason: 'completed' });
    const past = await s.api('GET', `/v1/sessions/${id}/state?at=${all.length + 1}`);
    expect(past.status).toBe(400);
    expect(past.body.error.code).toBe('SEQ_OUT_OF_RANGE');
  });

  it('refuses a second turn while one runs (409 SESSION_BUSY); abort ends the turn aborted', async () => {
    const id = await newSession();
    const noTurn = await s.api('POST', `/v1/sessions/${id}/abort`);
    expect(noTurn.status).toBe(409);
    expect(noTurn.body.error.code).toBe('NO_RUNNING_TURN');
    const submitted = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long answer please' });
    expect(submitted.status).toBe(202);
    const busy = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'another' });
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('SESSION_BUSY');
    // Abort once the model is streaming.
    await eventually(async () =>
      (await journalEvents(id)).some((e) => e.type === 'assistant/chunk') ? true : (await s.server.turns.readEvents(id)).events.some((e) => e.type === 'assistant/chunk') || undefined,
    );
    const aborted = await s.api('POST', `/v1/sessions/${id}/abort`);
    expect(aborted.status).toBe(202);
    expect(aborted.body).toEqual({ turn: 1 });
    const end = await s.server.turns.turnEnd(id);
    expect(end?.data.reason).toBe('aborted');
    const events = await journalEvents(id);
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'aborted' } });
    // The session takes the next turn.
    const next = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'hello again' });
    expect(next.status).toBe(202);
    expect(next.body.turn.turn).toBe(2);
    expect((await s.server.turns.turnEnd(id))?.data.reason).toBe('completed');
  });

  it('a submit repeated with the same Idempotency-Key answers the turn the first one started, running or ended', async () => {
    const id = await newSession();
    const key = { 'idempotency-key': 'b5a1c0de-7d1e-4f00-9a4e-0123456789ab' };
    const first = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long answer please' }, { headers: key });
    expect(first.status).toBe(202);
    expect(first.body.turn).toMatchObject({ sessionId: id, turn: 1 });
    expect(first.body.turn.replayed).toBeUndefined();
    const whileRunning = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long answer please' }, { headers: key });
    expect(whileRunning.status).toBe(202);
    expect(whileRunning.body.turn).toEqual({ ...first.body.turn, replayed: true });
    await s.server.turns.turnEnd(id, 1);
    const afterEnd = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long answer please' }, { headers: key });
    expect(afterEnd.body.turn).toEqual({ ...first.body.turn, replayed: true });
    // One turn ran; a new key is a new turn; a key that is not one is 400.
    const events = await journalEvents(id);
    expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(1);
    const second = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'hello again' }, { headers: { 'idempotency-key': 'another-key' } });
    expect(second.body.turn).toMatchObject({ turn: 2 });
    expect(second.body.turn.replayed).toBeUndefined();
    await s.server.turns.turnEnd(id, 2);
    const bad = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'x' }, { headers: { 'idempotency-key': 'no spaces allowed' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_REQUEST');
  });

  it('an Idempotency-Key sent again with a different request is 409 IDEMPOTENCY_KEY_REUSED, while its turn runs and after it ended (as on a queue)', async () => {
    const id = await newSession();
    const key = { 'idempotency-key': 'reused-key-0001' };
    const first = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long answer please' }, { headers: key });
    expect(first.status).toBe(202);
    const whileRunning = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'something else' }, { headers: key });
    expect(whileRunning.status).toBe(409);
    expect(whileRunning.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    await s.server.turns.turnEnd(id, 1);
    // Ended: the key is found in the journal (as after a restart), with its request's digest.
    for (const other of [{ prompt: 'something else' }, { prompt: 'a long answer please', model: 'other' }]) {
      const afterEnd = await s.api('POST', `/v1/sessions/${id}/turns`, other, { headers: key });
      expect(afterEnd.status).toBe(409);
      expect(afterEnd.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    }
    const same = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long answer please' }, { headers: key });
    expect(same.status).toBe(202);
    expect(same.body.turn).toEqual({ ...first.body.turn, replayed: true });
    const events = await journalEvents(id);
    expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(1);
    // The marker keeps a digest of the request, never the prompt a second time.
    const markers = events.filter((e) => e.type === 'serve/turn-job');
    expect(markers).toHaveLength(1);
    expect(markers[0]!.data).toEqual({ jobId: 'key:reused-key-0001', requestDigest: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(JSON.stringify(markers[0])).not.toContain('long answer');
  });
});

describe('approvals over HTTP', () => {
  it('a pending approval answered over HTTP lets the turn continue; a second answer is 409 APPROVAL_ALREADY_DECIDED', async () => {
    const id = await newSession();
    const submitted = await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'poke it', approve: 'always-ask' });
    expect(submitted.status).toBe(202);
    const pending = await eventually(async () => {
      const r = await s.api('GET', `/v1/sessions/${id}/approvals`);
      return r.body.approvals.length > 0 ? r.body.approvals[0] : undefined;
    });
    expect(pending).toMatchObject({ sessionId: id, turn: 1, step: 1, name: 'poke', permission: 'write' });
    expect(JSON.parse(pending.arguments)).toEqual({ key: 'k', value: 'v' });
    const unknown = await s.api('POST', `/v1/sessions/${id}/approvals/no-such-call`, { decision: 'allow' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('APPROVAL_NOT_FOUND');
    const badDecision = await s.api('POST', `/v1/sessions/${id}/approvals/${pending.callId}`, { decision: 'maybe' });
    expect(badDecision.status).toBe(400);
    const first = await s.api('POST', `/v1/sessions/${id}/approvals/${pending.callId}`, { decision: 'allow' });
    expect(first.status).toBe(200);
    expect(first.body.approval).toMatchObject({ callId: pending.callId, decision: 'allow' });
    const second = await s.api('POST', `/v1/sessions/${id}/approvals/${pending.callId}`, { decision: 'deny' });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('APPROVAL_ALREADY_DECIDED');
    expect((await s.server.turns.turnEnd(id))?.data.reason).toBe('completed');
    expect(s.ran).toContain('poke:k=v');
    const events = await journalEvents(id);
    const requested = events.filter((e) => e.type === 'approval/requested');
    const decided = events.filter((e) => e.type === 'approval/decided');
    expect(requested).toHaveLength(1);
    expect(requested[0]!.ignorable).toBe(true);
    expect(decided).toHaveLength(1);
    expect(decided[0]!.data).toMatchObject({ callId: pending.callId, decision: 'allow', decidedBy: 'user' });
    expect(requested[0]!.seq).toBeLessThan(decided[0]!.seq);
    expect(events.find((e) => e.type === 'tool/result')?.data).toMatchObject({ callId: pending.callId });
    expect((events.find((e) => e.type === 'tool/result')!.data as { message: { isError?: boolean } }).message.isError).toBeFalsy();
    // After the turn (and after a restart of what the server remembers) the answer is still a conflict.
    const later = await s.api('POST', `/v1/sessions/${id}/approvals/${pending.callId}`, { decision: 'allow' });
    expect(later.status).toBe(409);
  });

  it('a deny over HTTP is journaled with its reason and the tool does not run', async () => {
    const id = await newSession();
    const ranBefore = s.ran.length;
    await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'poke again', approve: 'always-ask' });
    const pending = await eventually(async () => (await s.api('GET', `/v1/sessions/${id}/approvals`)).body.approvals[0]);
    expect((await s.api('POST', `/v1/sessions/${id}/approvals/${pending.callId}`, { decision: 'deny', reason: 'not today' })).status).toBe(200);
    expect((await s.server.turns.turnEnd(id))?.data.reason).toBe('completed');
    expect(s.ran.length).toBe(ranBefore);
    const decided = (await journalEvents(id)).find((e) => e.type === 'approval/decided');
    expect(decided?.data).toMatchObject({ decision: 'deny', reason: 'not today' });
  });

  it('denies an approval nobody answers once the timeout passes', async () => {
    const quick = await serve({ approvalTimeoutMs: 150, approvalPolicy: 'read-only' });
    try {
      const id = (await quick.api('POST', '/v1/sessions', {})).body.session.id as string;
      await quick.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'poke nobody' });
      expect((await quick.server.turns.turnEnd(id))?.data.reason).toBe('completed');
      expect(quick.ran).toEqual([]);
      const decided = (await quick.server.turns.readEvents(id)).events.find((e) => e.type === 'approval/decided');
      expect(decided?.data).toMatchObject({ decision: 'deny', reason: 'no answer within 150 ms' });
      const late = await quick.api('POST', `/v1/sessions/${id}/approvals/${(decided!.data as { callId: string }).callId}`, { decision: 'allow' });
      expect(late.status).toBe(409);
      expect(late.body.error.code).toBe('APPROVAL_ALREADY_DECIDED');
    } finally {
      await quick.close();
    }
  });

  it('aborting a turn that waits for an approval denies it and ends the turn aborted', async () => {
    const id = await newSession();
    await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'poke and wait', approve: 'always-ask' });
    await eventually(async () => (await s.api('GET', `/v1/sessions/${id}/approvals`)).body.approvals[0]);
    expect((await s.api('POST', `/v1/sessions/${id}/abort`)).status).toBe(202);
    expect((await s.server.turns.turnEnd(id))?.data.reason).toBe('aborted');
    expect((await s.api('GET', `/v1/sessions/${id}/approvals`)).body.approvals).toEqual([]);
  });
});

describe('the SSE stream', () => {
  it('sends every event as id: <seq>, and a reconnect with Last-Event-ID sees each event exactly once', async () => {
    const id = await newSession();
    const url = `${s.server.url}/v1/sessions/${id}/stream`;
    const first = openStream(url);
    await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long answer, streamed' });
    const seen: AnySessionEvent[] = [];
    // Drop the connection after a few events, mid-stream, several times.
    for (let round = 0; round < 4; round++) {
      const stream = round === 0 ? first : openStream(url, { lastEventId: String(seen.at(-1)!.seq) });
      let count = 0;
      seen.push(...(await readUntil(stream.frames, (e) => ++count >= 7 || e.type === 'turn/end')));
      stream.close();
      if (seen.at(-1)!.type === 'turn/end') break;
    }
    const rest = openStream(`${url}?after=0`, { lastEventId: String(seen.at(-1)!.seq) });
    if (seen.at(-1)!.type !== 'turn/end') seen.push(...(await readUntil(rest.frames, (e) => e.type === 'turn/end')));
    rest.close();
    const journal = await journalEvents(id);
    expect(seen.map((e) => e.seq)).toEqual(journal.map((e) => e.seq));
    expect(seen).toEqual(journal);
    expect(journal.filter((e) => e.type === 'assistant/chunk').length).toBeGreaterThan(20);
  });

  it('?after=<seq> starts after that seq; a bad Last-Event-ID is 400', async () => {
    const id = await newSession();
    await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'hello' });
    await s.server.turns.turnEnd(id);
    const journal = await journalEvents(id);
    const stream = openStream(`${s.server.url}/v1/sessions/${id}/stream?after=3`);
    const events = await readUntil(stream.frames, (e) => e.type === 'turn/end');
    stream.close();
    expect(events.map((e) => e.seq)).toEqual(journal.slice(3).map((e) => e.seq));
    const bad = await s.api('GET', `/v1/sessions/${id}/stream`, undefined, { headers: { 'last-event-id': 'abc' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_LAST_EVENT_ID');
  });
});
