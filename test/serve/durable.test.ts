/**
 * A live stream shows only stored events (issue 18): a `harness serve` worker is SIGKILLed the
 * moment its SSE client has received a chunk of the model's answer — before the journal's next
 * flush, if the stream ran ahead of the store — and restarted; the client reconnects with
 * Last-Event-ID. Every event the client ever received must be stored at its seq with the same
 * content (a streamed event a kill lost would be missing, or its seq reused by the repair's
 * events), and in the end the client has seen every stored event exactly once. On the file store
 * and on PostgreSQL (a real server, test/support/postgres.ts).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnySessionEvent } from '../../runtime/index.ts';
import { tempDir } from '../agent/support.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { api, killWorker, startWorker, StoredSessions, type Worker } from './fleet.ts';
import { openStream } from './support.ts';

const KILLS = 3;

let pg: TestPostgres;
beforeAll(async () => {
  pg = await startPostgres();
}, 60_000);
afterAll(async () => {
  await pg?.stop();
});

describe.each(['file', 'postgres'] as const)('a stream on the %s store', (kind) => {
  it('never shows an event the store does not hold, across workers killed right after streaming one', { timeout: 180_000 }, async () => {
    const dataDir = join(tempDir('harness-durable-'), 'data');
    mkdirSync(join(dataDir, 'sessions'), { recursive: true });
    const store = kind === 'postgres' ? await pg.createDatabase('durable') : undefined;
    const options = { dataDir, ...(store ? { store } : {}), paceMs: 10 };
    const stored = await StoredSessions.open(options);
    let worker: Worker = await startWorker(options);
    try {
      const id = (await api(worker.url, 'POST', '/v1/sessions', {})).session.id as string;
      const seen: AnySessionEvent[] = [];
      const lastSeen = (): number => seen.at(-1)?.seq ?? 0;
      /** Reads the worker's stream from the last event seen (Last-Event-ID) until `stop` says so. */
      const follow = async (stop: (event: AnySessionEvent) => boolean): Promise<void> => {
        const stream = openStream(`${worker.url}/v1/sessions/${id}/stream`, { lastEventId: String(lastSeen()) });
        try {
          for await (const frame of stream.frames) {
            const event = JSON.parse(frame.data) as AnySessionEvent;
            seen.push(event);
            if (stop(event)) return;
          }
        } finally {
          stream.close();
        }
      };
      for (let kill = 0; kill < KILLS; kill++) {
        const following = follow((event) => {
          // A chunk of this turn's answer (step 2), appended a moment ago: kill before anything else runs.
          const chunk = event.type === 'assistant/chunk' ? (event.data as { turn: number; step: number; chunk: { type: string } }) : undefined;
          if (chunk?.turn !== kill + 1 || chunk.step !== 2 || chunk.chunk.type !== 'text-delta') return false;
          worker.child.kill('SIGKILL');
          return true;
        });
        await api(worker.url, 'POST', `/v1/sessions/${id}/turns`, { prompt: `turn ${kill + 1}` });
        await following;
        await killWorker(worker);
        worker = await startWorker(options);
      }
      // The next turn's open repairs the killed one; this one runs to its end.
      const following = follow((event) => event.type === 'turn/end' && (event.data as { turn: number }).turn === KILLS + 1);
      await api(worker.url, 'POST', `/v1/sessions/${id}/turns`, { prompt: 'the last turn' });
      await following;

      const events = await stored.events(id);
      // Everything the client received is what the store holds at that seq…
      for (const event of seen) expect(events[event.seq - 1], `seq ${event.seq}`).toEqual(event);
      // …and, reconnecting with Last-Event-ID after each kill, it saw every stored event exactly once.
      expect(seen.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
      const ends = events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: string }).reason);
      expect(ends).toEqual([...Array<string>(KILLS).fill('interrupted'), 'completed']);
    } finally {
      await killWorker(worker);
      await stored.close();
    }
  });
});
