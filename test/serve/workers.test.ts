/**
 * Many workers (issue 18, 3, and the acceptance's multi-worker soak): three `harness serve`
 * worker processes (worker.ts) share one real PostgreSQL — the journal store and the turn queue;
 * in a smaller second case only the queue, the journals in a file store on a shared data
 * directory — and run sessions of several tool-calling turns each (the scripted model), submitted concurrently
 * over HTTP to whichever worker is up. Workers are SIGKILLed while they run turns and restarted.
 * Every session has one SSE client that reconnects, to any worker, with `Last-Event-ID` whenever
 * its connection drops.
 *
 * Afterwards, for every session: its seqs are contiguous and each is stored once; every event a
 * client was shown (streamed, or returned by GET …/events) is stored at its seq with the same
 * content; every submitted turn ran once (its job's id journaled once, one turn after it) — a
 * submit whose worker died before answering is sent again with the same `Idempotency-Key`, which
 * queues nothing new; every killed turn was closed (`interrupted`, by the repair of the next
 * opener) and the session then completed a turn; every tool call has one result; and the SSE
 * client has seen every stored event exactly once and nothing else.
 *
 * Without wall-clock assertions: waits are bounded only to turn a hang into a message.
 */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnySessionEvent } from '../../runtime/index.ts';
import { tempDir } from '../agent/support.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { api, startWorker, StoredSessions, type Worker, type WorkerOptions } from './fleet.ts';
import { openStream } from './support.ts';

const WORKERS = 3;
/** Turns per session at least (more while workers are still being killed, and after an interrupted last one). */
const TURNS = 3;
/**
 * The soak (the acceptance: 30 sessions, 10 kills, all in PostgreSQL), and a smaller one with the
 * journals in a file store on a shared data directory (its lock files keep one writer per
 * session across processes) and only the queue in PostgreSQL. `kills`: kills of a worker that was
 * running a turn, at least — and at least this many turns interrupted; at most three times as
 * many kills (bounds the run should kills keep missing turns).
 */
const CASES = [
  { store: 'postgres', sessions: 30, kills: 10 },
  { store: 'file', sessions: 6, kills: 3 },
] as const;
/** A hang guard, not a measurement. */
const HANG_MS = 180_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let pg_: TestPostgres;
beforeAll(async () => {
  pg_ = await startPostgres();
}, 120_000);
afterAll(async () => {
  await pg_?.stop();
});

/** The workers, by slot; a slot is empty while its worker restarts. */
class Fleet {
  readonly slots: (Worker | undefined)[] = [];
  private readonly starting = new Set<Promise<void>>();
  constructor(private readonly options: WorkerOptions) {}

  async start(count: number): Promise<void> {
    for (let i = 0; i < count; i++) this.slots.push(await startWorker(this.options));
  }

  live(): Worker[] {
    return this.slots.filter((w): w is Worker => w !== undefined);
  }

  /** A live worker (the `n`-th, round robin), waiting for one if all restart. */
  async any(n: number): Promise<Worker> {
    for (;;) {
      const live = this.live();
      if (live.length > 0) return live[n % live.length]!;
      await sleep(50);
    }
  }

  /** SIGKILLs the worker of `slot` and starts another in its place (not waited for). */
  kill(slot: number): void {
    const victim = this.slots[slot]!;
    this.slots[slot] = undefined;
    victim.child.kill('SIGKILL');
    const restart = (async () => {
      await victim.exited;
      this.slots[slot] = await startWorker(this.options);
    })();
    this.starting.add(restart);
    void restart.finally(() => this.starting.delete(restart));
  }

  async settled(): Promise<void> {
    while (this.starting.size > 0) await Promise.all([...this.starting]);
  }

  async stop(): Promise<void> {
    await this.settled().catch(() => undefined);
    for (const w of this.live()) w.child.kill('SIGKILL');
    await Promise.all(this.live().map((w) => w.exited));
  }
}

/** Calls a live worker's API, on to another worker while the call fails for want of one (a worker killed under it). */
async function anyApi(fleet: Fleet, n: number, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<any> {
  for (let attempt = 0; ; attempt++) {
    const worker = await fleet.any(n + attempt);
    try {
      return await api(worker.url, method, path, body, headers);
    } catch (error) {
      if ((error as { status?: number }).status !== undefined) throw error; // an answer: not a dead worker
      if (attempt > 200) throw error;
      await sleep(100);
    }
  }
}

/** A session's SSE client: one connection at a time to any live worker, resumed with Last-Event-ID. */
class Follower {
  readonly seen: AnySessionEvent[] = [];
  /** Frames whose seq was not the next one (a repeat or a gap): must stay empty. */
  readonly misordered: { expected: number; got: number }[] = [];
  reconnects = 0;
  private stopped = false;
  private close: (() => void) | undefined;
  private readonly waiters = new Set<() => void>();
  readonly done: Promise<void>;

  constructor(
    private readonly fleet: Fleet,
    private readonly id: string,
    private readonly n: number,
  ) {
    this.done = this.run();
  }

  private get lastSeq(): number {
    return this.seen.at(-1)?.seq ?? 0;
  }

  private async run(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      const worker = await this.fleet.any(this.n + attempt);
      const stream = openStream(`${worker.url}/v1/sessions/${this.id}/stream`, { lastEventId: String(this.lastSeq) });
      this.close = stream.close;
      try {
        for await (const frame of stream.frames) {
          const event = JSON.parse(frame.data) as AnySessionEvent;
          if (event.seq !== this.lastSeq + 1) this.misordered.push({ expected: this.lastSeq + 1, got: event.seq });
          this.seen.push(event);
          for (const wake of this.waiters) wake();
        }
      } catch {
        // the worker was killed under the connection: reconnect
      }
      if (this.stopped) break;
      this.reconnects++;
      await sleep(100);
    }
  }

  /** Resolves once `ready()` is true of what was seen (checked on every event). */
  async until<T>(ready: (seen: readonly AnySessionEvent[]) => T | undefined, what: string): Promise<T> {
    const deadline = Date.now() + HANG_MS;
    for (;;) {
      const value = ready(this.seen);
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`session ${this.id}: no ${what} after ${HANG_MS} ms (seen up to seq ${this.lastSeq})`);
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          this.waiters.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, 1000);
        this.waiters.add(wake);
      });
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.close?.();
    await this.done;
  }
}

/** The reason of the `turn/end` that follows job `jobId`'s marker, once seen. */
function endAfterJob(seen: readonly AnySessionEvent[], jobId: string): string | undefined {
  const marker = seen.findIndex((e) => e.type === 'serve/turn-job' && (e.data as { jobId: string }).jobId === jobId);
  if (marker < 0) return undefined;
  const end = seen.slice(marker).find((e) => e.type === 'turn/end');
  return end === undefined ? undefined : (end.data as { reason: string }).reason;
}

describe.each(CASES)('many workers on one PostgreSQL queue, journals in the $store store', ({ store, sessions: SESSIONS, kills: KILLS }) => {
  it('runs every submitted turn once across workers SIGKILLed mid-turn; nothing shown to a client is lost or changed; killed turns are closed and their sessions go on', {
    timeout: 600_000,
  }, async () => {
    const MAX_KILLS = 3 * KILLS;
    const dataDir = join(tempDir('harness-workers-'), 'data');
    mkdirSync(join(dataDir, 'sessions'), { recursive: true });
    const queueUrl = await pg_.createDatabase(`workers_${store}`);
    const storeUrl = store === 'postgres' ? queueUrl : undefined;
    const fleet = new Fleet({ dataDir, ...(storeUrl ? { store: storeUrl } : {}), queueUrl, paceMs: 15 });
    const stored = await StoredSessions.open({ dataDir, ...(storeUrl ? { store: storeUrl } : {}) });
    const followers: Follower[] = [];
    try {
      await fleet.start(WORKERS);
      const ids: string[] = [];
      for (let n = 0; n < SESSIONS; n++) ids.push((await anyApi(fleet, n, 'POST', '/v1/sessions', {})).session.id);
      for (const [n, id] of ids.entries()) followers.push(new Follower(fleet, id, n));

      // The killer: SIGKILL a worker that runs a turn (another one is up), until enough kills
      // landed and enough turns were seen interrupted.
      let kills = 0;
      const interruptedSeen = (): number => followers.reduce((sum, f) => sum + f.seen.filter((e) => e.type === 'turn/end' && (e.data as { reason: string }).reason === 'interrupted').length, 0);
      let killing = true;
      const killer = (async () => {
        for (let round = 0; (kills < KILLS || interruptedSeen() < KILLS) && kills < MAX_KILLS; round++) {
          await sleep(400);
          if (fleet.live().length < 2) continue;
          const slot = round % WORKERS;
          const worker = fleet.slots[slot];
          if (worker === undefined) continue;
          const running = await api(worker.url, 'GET', '/v1/sessions')
            .then((body: { sessions: { runningTurn?: { runsHere: boolean } }[] }) => body.sessions.filter((s) => s.runningTurn?.runsHere === true).length)
            .catch(() => 0);
          if (running === 0 || fleet.slots[slot] !== worker) continue;
          fleet.kill(slot);
          kills++;
        }
        killing = false;
      })();

      // Each session's turns one after another, each submitted to whichever worker is up (again,
      // with the same key, when a worker died before it answered); what GET …/events returns is
      // acknowledged too.
      const submitted = new Map<string, string[]>();
      const returned = new Map<string, AnySessionEvent[]>();
      await Promise.all(
        ids.map(async (id, n) => {
          const follower = followers[n]!;
          const jobs: string[] = [];
          submitted.set(id, jobs);
          returned.set(id, []);
          let lastReason = '';
          for (let t = 0; t < TURNS || killing || lastReason !== 'completed'; t++) {
            const { job } = await anyApi(fleet, n + t, 'POST', `/v1/sessions/${id}/turns`, { prompt: `turn ${t + 1}` }, { 'idempotency-key': `${id}-turn-${t + 1}` });
            if (jobs.at(-1) !== job.jobId) jobs.push(job.jobId);
            lastReason = await follower.until((seen) => endAfterJob(seen, job.jobId), `turn/end after job ${job.jobId}`);
            const { events } = await anyApi(fleet, n + t + 1, 'GET', `/v1/sessions/${id}/events?after=${job.afterSeq}&limit=10000`);
            returned.get(id)!.push(...(events as AnySessionEvent[]));
          }
        }),
      );
      await killer;
      await fleet.settled();
      // A submit sent again with a key already used queues nothing.
      const again = await anyApi(fleet, 0, 'POST', `/v1/sessions/${ids[0]}/turns`, { prompt: 'turn 1' }, { 'idempotency-key': `${ids[0]}-turn-1` });
      expect(again.job).toMatchObject({ jobId: submitted.get(ids[0]!)![0], replayed: true });

      const journals = new Map<string, AnySessionEvent[]>();
      for (const id of ids) journals.set(id, await stored.events(id)); // readJournal refuses a gap or a repeat
      // Each stream follows its session to the stored end, then stops.
      await Promise.all(followers.map((f, n) => f.until((seen) => (seen.length >= journals.get(ids[n]!)!.length ? true : undefined), 'stored end')));
      for (const f of followers) await f.stop();

      expect(kills).toBeGreaterThanOrEqual(KILLS);
      // Each seq stored once: in PostgreSQL as many rows as the last seq, which is the session's
      // (a file journal holds one line per seq: readJournal checks).
      const counts = new Map<string, { id: string; n: number; max: number; last: number }>();
      if (storeUrl !== undefined) {
        const client = new pg.Client({ connectionString: storeUrl });
        await client.connect();
        const rows = await client
          .query<{ id: string; n: number; max: number; last: number }>(
            'SELECT s.id, count(e.seq)::int AS n, coalesce(max(e.seq), 0)::int AS max, s.last_seq::int AS last FROM harness_sessions s LEFT JOIN harness_events e ON e.session_id = s.id GROUP BY s.id, s.last_seq',
          )
          .finally(() => client.end());
        for (const row of rows.rows) counts.set(row.id, row);
      }

      let interrupted = 0;
      for (const [n, id] of ids.entries()) {
        const events = journals.get(id)!;
        if (storeUrl !== undefined) expect(counts.get(id)).toEqual({ id, n: events.length, max: events.length, last: events.length });
        // Every event a client was shown is the stored one; the stream showed each exactly once.
        const follower = followers[n]!;
        expect(follower.misordered).toEqual([]);
        expect(follower.seen).toEqual(events);
        for (const event of returned.get(id)!) expect(event, `${id} seq ${event.seq}`).toEqual(events[event.seq - 1]);
        // Every job journaled once, in submission order, each followed by exactly one turn.
        const jobs = events.filter((e) => e.type === 'serve/turn-job').map((e) => (e.data as { jobId: string }).jobId);
        expect(jobs).toEqual(submitted.get(id));
        const turnsPerJob: number[] = [];
        for (const e of events) {
          if (e.type === 'serve/turn-job') turnsPerJob.push(0);
          else if (e.type === 'turn/start') turnsPerJob[turnsPerJob.length - 1]!++;
        }
        expect(turnsPerJob).toEqual(jobs.map(() => 1));
        // Every turn closed; after an interrupted one the session completed another.
        const starts = events.filter((e) => e.type === 'turn/start');
        const reasons = events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: string }).reason);
        expect(starts).toHaveLength(jobs.length);
        expect(reasons).toHaveLength(starts.length);
        expect(reasons.every((r) => r === 'completed' || r === 'interrupted')).toBe(true);
        expect(reasons.at(-1)).toBe('completed');
        interrupted += reasons.filter((r) => r === 'interrupted').length;
        // Tool-calling turns: every call got exactly one result.
        const calls = events.filter((e) => e.type === 'tool/call').map((e) => (e.data as { callId: string }).callId);
        const results = events.filter((e) => e.type === 'tool/result').map((e) => (e.data as { callId: string }).callId);
        expect(calls.length).toBeGreaterThanOrEqual(reasons.filter((r) => r === 'completed').length);
        expect(results.sort()).toEqual(calls.sort());
      }
      expect(interrupted).toBeGreaterThanOrEqual(KILLS);
      console.info(
        `workers soak (${store} store, ${SESSIONS} sessions): ${kills} kills, ${interrupted} turns interrupted, ${[...submitted.values()].reduce((s, j) => s + j.length, 0)} turns, ${followers.reduce((s, f) => s + f.reconnects, 0)} stream reconnects`,
      );
    } finally {
      for (const f of followers) await f.stop().catch(() => undefined);
      await fleet.stop();
      await stored.close();
    }
  });
});
