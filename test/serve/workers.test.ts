/**
 * Many workers (issue 18, 3): several `harness serve` workers share one queue database (a real
 * PostgreSQL) and one data directory; turns submitted over HTTP to any worker are jobs taken by any
 * worker; workers are SIGKILLed mid-turn and restarted. Afterwards every session's seqs are
 * contiguous, every job's turn ran exactly once, every killed turn was closed (`interrupted`) and
 * its session went on to its next turn on another worker.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJournal, type AnySessionEvent } from '../../runtime/index.ts';
import { journalPath } from '../../runtime/internal.ts';
import { tempDir } from '../agent/support.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { TOKEN } from './support.ts';

const WORKERS = 3;
const SESSIONS = 6;
const TURNS = 3;
const KILLS = 3;

let pg: TestPostgres;
const dir = tempDir('harness-workers-');
const dataDir = join(dir, 'data');
mkdirSync(join(dataDir, 'sessions'), { recursive: true });

interface Worker {
  child: ChildProcess;
  url: string;
}

function startWorker(): Promise<Worker> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'worker.ts')], {
    env: { ...process.env, WORKER_DATA_DIR: dataDir, WORKER_QUEUE_URL: pg.url, WORKER_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const match = /listening (\S+)/.exec(out);
      if (match) resolve({ child, url: match[1]! });
    });
    child.once('exit', (code) => reject(new Error(`worker exited ${code}: ${err}`)));
  });
}

const api = async (url: string, method: string, path: string, body?: unknown): Promise<any> => {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
};

async function journal(id: string): Promise<AnySessionEvent[]> {
  const out: AnySessionEvent[] = [];
  for await (const event of readJournal(journalPath(id, dataDir))) out.push(event);
  return out;
}

const workers: Worker[] = [];
beforeAll(async () => {
  pg = await startPostgres();
  for (let i = 0; i < WORKERS; i++) workers.push(await startWorker());
}, 120_000);
afterAll(async () => {
  for (const w of workers) w.child.kill('SIGKILL');
  await pg?.stop();
});

describe('many workers on one queue database', () => {
  it('runs every submitted turn once across workers killed mid-turn; killed turns are closed and their sessions go on', { timeout: 240_000 }, async () => {
    const ids: string[] = [];
    for (let i = 0; i < SESSIONS; i++) ids.push((await api(workers[i % WORKERS]!.url, 'POST', '/v1/sessions', {})).session.id);
    let kills = 0;
    let stop = false;
    // The killer: SIGKILL a worker that is running a turn, start a new one in its place.
    const killer = (async () => {
      while (!stop && kills < KILLS) {
        await new Promise((r) => setTimeout(r, 800));
        const index = kills % WORKERS;
        const victim = workers[index]!;
        victim.child.kill('SIGKILL');
        kills++;
        workers[index] = await startWorker();
      }
    })();
    const submitted = new Map<string, string[]>();
    // Each session's turns one after another (at least TURNS, on until the kills are done, and
    // until its last turn completed);
    // each submitted to whichever worker is up.
    await Promise.all(
      ids.map(async (id, n) => {
        submitted.set(id, []);
        let lastReason = '';
        for (let t = 0; t < TURNS || kills < KILLS || lastReason !== 'completed'; t++) {
          let job: { jobId: string; afterSeq: number } | undefined;
          for (let attempt = 0; job === undefined; attempt++) {
            try {
              job = (await api(workers[(n + t + attempt) % WORKERS]!.url, 'POST', `/v1/sessions/${id}/turns`, { prompt: `turn ${t + 1}` })).job;
            } catch {
              await new Promise((r) => setTimeout(r, 200)); // that worker was just killed
            }
          }
          submitted.get(id)!.push(job.jobId);
          // Wait for a turn/end after the job was queued (its own, or the repair's `interrupted`).
          const until = Date.now() + 120_000;
          for (;;) {
            const events = await journal(id).catch(() => [] as AnySessionEvent[]);
            const marker = events.findIndex((e) => e.type === 'serve/turn-job' && (e.data as { jobId: string }).jobId === job.jobId);
            const end = marker >= 0 ? events.slice(marker).find((e) => e.type === 'turn/end') : undefined;
            if (end !== undefined) {
              lastReason = (end.data as { reason: string }).reason;
              break;
            }
            if (Date.now() > until) throw new Error(`session ${id}: job ${job.jobId} never ended`);
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      }),
    );
    stop = true;
    await killer;
    expect(kills).toBeGreaterThanOrEqual(KILLS);
    let interrupted = 0;
    for (const id of ids) {
      const events = await journal(id); // readJournal refuses a non-contiguous seq
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const jobs = events.filter((e) => e.type === 'serve/turn-job').map((e) => (e.data as { jobId: string }).jobId);
      // Every job journaled once, in submission order; each started exactly one turn.
      expect(jobs).toEqual(submitted.get(id));
      const starts = events.filter((e) => e.type === 'turn/start');
      const ends = events.filter((e) => e.type === 'turn/end');
      expect(starts.length).toBeGreaterThanOrEqual(TURNS);
      expect(starts).toHaveLength(submitted.get(id)!.length);
      expect(ends).toHaveLength(starts.length);
      const reasons = ends.map((e) => (e.data as { reason: string }).reason);
      expect(reasons.every((r) => r === 'completed' || r === 'interrupted')).toBe(true);
      interrupted += reasons.filter((r) => r === 'interrupted').length;
      // The session went on after every killed turn: its last turn completed.
      expect(reasons.at(-1)).toBe('completed');
      // Every tool call got exactly one result.
      const calls = events.filter((e) => e.type === 'tool/call').map((e) => (e.data as { callId: string }).callId);
      const results = events.filter((e) => e.type === 'tool/result').map((e) => (e.data as { callId: string }).callId);
      expect(results.sort()).toEqual(calls.sort());
    }
    // Kills landed inside turns (the killer waits while turns run, so most do).
    expect(interrupted).toBeGreaterThan(0);
  });
});
