/**
 * The turn API in-process (plugins/serve TurnService), as an embedder uses it without HTTP; and a
 * server closing while a turn runs and a stream is open, or while a stream follows a turn another
 * server ran.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AnySessionEvent } from '../../runtime/index.ts';
import { TurnService } from '../../plugins/serve/index.ts';
import { tempDir } from '../agent/support.ts';
import { openStream, serve } from './support.ts';

describe('TurnService in-process', () => {
  it('creates a session, submits a turn, answers its approval from the event stream, and sees every event once', async () => {
    const s = await serve({}, { paceMs: 1 });
    const turns = new TurnService(s.harness, { approvalPolicy: 'always-ask', cwd: s.dir });
    try {
      const { id } = await turns.createSession({ title: 'embedded' });
      const { startSeq, turn } = await turns.submitTurn(id, { prompt: 'peek at two keys' });
      expect(turn).toBe(1);
      const seen: AnySessionEvent[] = [];
      for await (const event of turns.events(id, { after: startSeq - 1 })) {
        seen.push(event);
        if (event.type === 'approval/requested') await turns.answerApproval(id, event.data.callId, { decision: 'allow' });
        if (event.type === 'turn/end') break;
      }
      expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => startSeq + i));
      expect(seen.filter((e) => e.type === 'approval/decided').map((e) => (e.data as { decision: string }).decision)).toEqual(['allow', 'allow']);
      expect(seen.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } });
      expect(s.ran).toEqual(['peek:a', 'peek:b']);
      await expect(turns.answerApproval(id, (seen.find((e) => e.type === 'approval/requested')!.data as { callId: string }).callId, { decision: 'deny' })).rejects.toMatchObject({
        code: 'APPROVAL_ALREADY_DECIDED',
      });
      // The iterator's return unsubscribed it.
      expect(turns.subscriberCount(id)).toBe(0);
      const { events } = await turns.readEvents(id);
      expect(events.slice(startSeq - 1)).toEqual(seen);
    } finally {
      await turns.close();
      await s.close();
    }
  });

  it('a stream opened after a turn began catches up from the journal and then goes on live, without a gap or a repeat', async () => {
    const s = await serve({}, { paceMs: 3 });
    try {
      const turns = s.server.turns;
      const { id } = await turns.createSession({});
      await turns.submitTurn(id, { prompt: 'a long one' });
      // Let some chunks be journaled (part of them still queued, not yet written) before subscribing.
      await new Promise((r) => setTimeout(r, 120));
      const seen: AnySessionEvent[] = [];
      for await (const event of turns.events(id)) {
        seen.push(event);
        if (event.type === 'turn/end') break;
      }
      expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
      expect(seen).toEqual((await turns.readEvents(id, { limit: 10_000 })).events);
    } finally {
      await s.close();
    }
  });

  it('closing the server aborts the running turn (journaled), ends open streams and resolves', async () => {
    const s = await serve({}, { paceMs: 5 });
    const { id } = (await s.api('POST', '/v1/sessions', {})).body.session;
    await s.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long one' });
    const stream = openStream(`${s.server.url}/v1/sessions/${id}/stream`);
    // Read by hand (not readUntil, which drops the connection): the server must end the stream.
    let frames = 0;
    for (let next = await stream.frames.next(); !next.done; next = await stream.frames.next()) {
      if (JSON.parse(next.value.data).type === 'assistant/chunk') break;
      frames++;
    }
    const closed = s.server.close();
    const after: AnySessionEvent[] = [];
    for (let next = await stream.frames.next(); !next.done; next = await stream.frames.next()) after.push(JSON.parse(next.value.data));
    await expect(closed).resolves.toBeUndefined();
    expect(frames).toBeGreaterThan(3);
    // The stream ended cleanly after the aborted turn's end reached it.
    expect(after.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } });
    const { events } = await s.server.turns.readEvents(id, { limit: 10_000 });
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } });
    await s.harness.dispose();
  });

  it("on one file store, a turn another server runs is running in this server's list (its journal's lock file, held by a live writer)", async () => {
    const store = `file:${join(tempDir('harness-live-'), 'data')}`;
    const a = await serve({ approvalPolicy: 'read-only' }, { store });
    const b = await serve({}, { store });
    try {
      const { id } = (await a.api('POST', '/v1/sessions', {})).body.session;
      const listed = async (): Promise<unknown> => (await b.api('GET', '/v1/sessions')).body.sessions.find((s: { id: string }) => s.id === id).runningTurn;
      const stream = openStream(`${a.server.url}/v1/sessions/${id}/stream`);
      const { startSeq } = (await a.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'poke it' })).body.turn;
      let callId: string | undefined;
      while (callId === undefined) {
        const next = await stream.frames.next();
        if (next.done) throw new Error('the stream ended before the approval was asked');
        const event = JSON.parse(next.value.data) as AnySessionEvent;
        if (event.type === 'approval/requested') callId = (event.data as { callId: string }).callId;
      }
      // Waiting for its approval on A: running there, seen from B.
      expect(await listed()).toEqual({ turn: 1, startSeq, runsHere: false });
      await a.api('POST', `/v1/sessions/${id}/approvals/${callId}`, { decision: 'allow' });
      await a.server.turns.turnEnd(id, 1);
      stream.close();
      expect(await listed()).toBeUndefined();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('closing a server ends each stream only after it passed on every event the store holds', async () => {
    // Two servers on one data directory: B's stream follows, through the store, a turn A runs.
    const store = `file:${join(tempDir('harness-drain-'), 'data')}`;
    const a = await serve({}, { paceMs: 1, store });
    const b = await serve({}, { store });
    try {
      const { id } = (await a.api('POST', '/v1/sessions', {})).body.session;
      const stream = openStream(`${b.server.url}/v1/sessions/${id}/stream`);
      const first = stream.frames.next(); // connects
      expect(await stream.status).toBe(200);
      await a.api('POST', `/v1/sessions/${id}/turns`, { prompt: 'a long one' });
      await a.server.turns.turnEnd(id, 1);
      // The turn is stored to its end; B closes at once, its streams however far behind it they are
      // (one in-process, opened just now, has read nothing yet).
      const late = b.server.turns.events(id);
      const closed = b.server.close();
      const seen: AnySessionEvent[] = [];
      for (let next = await first; !next.done; next = await stream.frames.next()) seen.push(JSON.parse(next.value.data));
      await closed;
      const lateSeen: AnySessionEvent[] = [];
      for await (const event of late) lateSeen.push(event);
      const { events } = await a.server.turns.readEvents(id, { limit: 10_000 });
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } });
      expect(seen).toEqual(events);
      expect(lateSeen).toEqual(events);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
