/**
 * Journal store benchmark (issue 18 acceptance): the PostgreSQL store (plugins/journal-postgres)
 * against the JSONL file store, in the same run. `npm run bench -- store`.
 *
 * 1. append: APPEND_EVENTS events through `SessionJournal.append` — a loop-like mix, mostly stream
 *    chunks — with a checkpoint after every window of 100 events (file: one write + fsync;
 *    Postgres: one transaction, committed), on each store in turn, interleaved. Wall-clock events/s
 *    (the Postgres side's work is in the server process, so this process's CPU time would hide it).
 * 2. fold: a 1M-event session opened the way the runtime resumes one — `openJournal` (the writer
 *    lease, the repair check and the fold of every event) — then closed; wall time per open, on
 *    each store, interleaved. Setup (not timed): the session is written once through the file
 *    store's writer and loaded into Postgres through the store's own `create` with a prefix (what
 *    `harness import harness` and fork do).
 *
 * The server is a throwaway cluster (test/support/postgres.ts) with `fsync=on`, so a commit costs
 * what it costs on a real server's disk, as the file store's fsync does. Each ratio is
 * Postgres ÷ file (time per event for append, time per open for the fold): 2x means the Postgres
 * store takes twice as long as the file store for the same work.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import pg from 'pg';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAssistantMessage, createToolResultMessage, createUserMessage } from '../runtime/llm/message.ts';
import type { StreamChunk } from '../runtime/llm/types.ts';
import { FileJournalStore, type JournalStore } from '../runtime/index.ts';
import { createJournal, openJournal } from '../runtime/internal.ts';
import type { SessionJournal } from '../runtime/session/types.ts';
import { openPostgresStore } from '../plugins/journal-postgres/index.ts';
import { startCluster } from '../test/support/postgres.ts';
import { check, envInt, interleave, isMain, median, printResult, ratioSpread, round, spread, stat, type BenchResult } from './support.ts';

const APPEND_EVENTS = envInt('BENCH_STORE_APPEND_EVENTS', 20_000);
const FOLD_EVENTS = envInt('BENCH_STORE_FOLD_EVENTS', 1_000_000);
const ROUNDS = envInt('BENCH_STORE_ROUNDS', 3);
/** Append rounds are short (seconds) and fsync-noisy: more of them. */
const APPEND_ROUNDS = envInt('BENCH_STORE_APPEND_ROUNDS', 5);

type Window = readonly [type: string, data: unknown][];

/** One window of 100 events the way a loop step journals them: chunks, then the message and a tool call. */
function makeWindow(turn: number, step: number, window: number): Window {
  const out: [string, unknown][] = [['step/start', { turn, step }]];
  let text = '';
  for (let i = 0; i < 94; i++) {
    const delta = `tok${i % 10} `;
    text += delta;
    const chunk: StreamChunk = { type: 'text-delta', index: 0, text: delta };
    out.push(['assistant/chunk', { turn, step, chunk }]);
  }
  out.push(['assistant/chunk', { turn, step, chunk: { type: 'finish', finish: { kind: 'tool-calls' } } }]);
  const callId = `call-${window}`;
  const message = createAssistantMessage({
    id: `m-${window}`,
    provider: 'bench',
    model: 'bench-1',
    content: [
      { type: 'text', text },
      { type: 'tool-call', id: callId, name: 'read', arguments: '{"path":"a.txt"}' },
    ],
  });
  out.push(['assistant/message', { turn, step, message, finish: { kind: 'tool-calls' }, usage: { inputTokens: 100, outputTokens: 95 } }]);
  out.push(['tool/call', { turn, step, callId, name: 'read', arguments: '{"path":"a.txt"}' }]);
  out.push(['tool/result', { turn, step, callId, message: createToolResultMessage({ id: `r-${window}`, callId, content: 'alpha\nbeta\n' }) }]);
  out.push(['step/end', { turn, step }]);
  return out;
}

function appendWindow(journal: SessionJournal, window: Window): void {
  for (const [type, data] of window) journal.append(type as 'step/start', data as never);
}

/** Wall-clock events/s of APPEND_EVENTS appends with a checkpoint per window, into a new session of `store`. */
async function appendRate(store: JournalStore, id: string): Promise<number> {
  const windows = Math.ceil(APPEND_EVENTS / 100);
  const made: Window[] = [];
  for (let w = 0; w < windows; w++) made.push(makeWindow(1, w + 1, w)); // the data arrives from the loop: not timed
  const journal = await createJournal({ store, id });
  const wall = performance.now();
  journal.append('turn/start', { turn: 1 });
  for (let w = 0; w < windows; w++) {
    appendWindow(journal, made[w]!);
    await journal.checkpoint();
  }
  const ms = performance.now() - wall;
  await journal.close();
  return journal.lastSeq / (ms / 1000);
}

/** A session of exactly FOLD_EVENTS events (turns of 10 steps), written through the store's writer. */
async function writeBigSession(store: JournalStore, id: string): Promise<void> {
  const journal = await createJournal({ store, id });
  let turn = 0;
  let window = 0;
  while (journal.lastSeq < FOLD_EVENTS - 200) {
    turn++;
    journal.append('turn/start', { turn });
    journal.append('user/message', { turn, message: createUserMessage(`task ${turn}`, { id: `u-${turn}` }) });
    for (let step = 1; step <= 10 && journal.lastSeq < FOLD_EVENTS - 200; step++) {
      appendWindow(journal, makeWindow(turn, step, window++));
      if (window % 20 === 0) await journal.checkpoint();
    }
    journal.append('turn/end', { turn, reason: 'completed' });
  }
  while (journal.lastSeq < FOLD_EVENTS) journal.append('session/title', { title: `title ${journal.lastSeq}` });
  await journal.close();
}

/** Copies session `id` from `from` into `to` through `to.create` with a prefix (import/fork's path). */
async function copySession(from: JournalStore, to: JournalStore, id: string): Promise<void> {
  const batches = from.read(id)[Symbol.asyncIterator]();
  const first = await batches.next();
  const lines = first.done ? [] : first.value;
  const header = lines[0]!.text;
  async function* rest(): AsyncGenerator<readonly string[]> {
    if (lines.length > 1) yield lines.slice(1).map((l) => l.text);
    for (let next = await batches.next(); !next.done; next = await batches.next()) yield next.value.map((l) => l.text);
  }
  const lease = await to.create(id, header, { prefix: { lines: rest(), lastSeq: FOLD_EVENTS } });
  await lease.release();
}

/** Wall ms of the runtime's open of a session for writing (lease, repair check, fold), then its close. */
async function openFold(store: JournalStore, id: string): Promise<number> {
  const wall = performance.now();
  const { journal } = await openJournal(id, { store });
  const ms = performance.now() - wall;
  if (journal.lastSeq !== FOLD_EVENTS) throw new Error(`the folded session has ${journal.lastSeq} events, not ${FOLD_EVENTS}`);
  await journal.close();
  return ms;
}

export async function run(): Promise<BenchResult> {
  const load = loadavg()
    .map((v) => v.toFixed(2))
    .join(' / ');
  const dir = mkdtempSync(join(tmpdir(), 'harness-bench-store-'));
  const cluster = await startCluster({ fsync: true });
  const file = new FileJournalStore({ dataDir: join(dir, 'data') });
  let postgres: JournalStore | undefined;
  try {
    const databaseUrl = await cluster.createDatabase('bench');
    postgres = await openPostgresStore({ url: databaseUrl });
    const stores = { file, postgres } as const;
    const contenders = ['file', 'postgres'] as const;

    // 1. append (a warm-up session each first).
    for (const kind of contenders) await appendRate(stores[kind], `warm-${kind}`);
    const append = await interleave(APPEND_ROUNDS, contenders, (kind, round) => appendRate(stores[kind], `append-${round}`));

    // 2. fold of a 1M-event session.
    const setupStarted = performance.now();
    await writeBigSession(file, 'fold');
    const written = performance.now();
    await copySession(file, postgres, 'fold');
    // A long-lived database has had its rows vacuumed and analysed; a fresh bulk load has not, and
    // autovacuum kicking in during the timed rounds (or a plan made without statistics) would be
    // measured instead of the store.
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    try {
      await admin.query('VACUUM ANALYZE harness_events');
      await admin.query('VACUUM ANALYZE harness_sessions');
    } finally {
      await admin.end();
    }
    const setupS = { write: (written - setupStarted) / 1000, copy: (performance.now() - written) / 1000 };
    for (const kind of contenders) await openFold(stores[kind], 'fold'); // warm-up: caches of both
    const fold = await interleave(ROUNDS, contenders, (kind) => openFold(stores[kind], 'fold'));

    const appendRatio = append.file.map((rate, i) => rate / append.postgres[i]!); // time per event: pg ÷ file
    const foldRatio = fold.postgres.map((ms, i) => ms / fold.file[i]!);
    const perSec = (values: number[]) => spread(stat(values), (v) => Math.round(v));
    const seconds = (values: number[]) => spread(stat(values.map((ms) => ms / 1000)), (v) => round(v));
    return {
      name: 'store',
      summary: `The PostgreSQL store against the file store in the same run (interleaved rounds, wall time, fsync on for both): append of ${APPEND_EVENTS} events with a checkpoint every 100, and the open (lease, repair check, fold) of a ${FOLD_EVENTS.toLocaleString('en')}-event session; load average ${load} (1 / 5 / 15 min) at the start`,
      tables: [
        {
          title: `append: events/s (wall, median of ${APPEND_ROUNDS}, min–max), a checkpoint every 100 events`,
          rows: [
            { store: 'file (write + fsync per checkpoint)', 'events/s': perSec(append.file) },
            { store: 'postgres (a committed transaction per checkpoint)', 'events/s': perSec(append.postgres) },
          ],
        },
        {
          title: `fold: openJournal of a ${FOLD_EVENTS.toLocaleString('en')}-event session, s (wall, median of ${ROUNDS}, min–max)`,
          rows: [
            { store: 'file', seconds: seconds(fold.file), 'events/s': Math.round(FOLD_EVENTS / (median(fold.file) / 1000)) },
            { store: 'postgres', seconds: seconds(fold.postgres), 'events/s': Math.round(FOLD_EVENTS / (median(fold.postgres) / 1000)) },
          ],
        },
      ],
      targets: [
        check('append time per event, postgres ÷ file', ratioSpread(stat(appendRatio)), '— (informational)', null),
        check(`fold of ${FOLD_EVENTS.toLocaleString('en')} events (openJournal), postgres ÷ file`, ratioSpread(stat(foldRatio)), '— (informational)', null),
      ],
      notes: [
        'a ratio is Postgres ÷ file for the same work: 2x means the PostgreSQL store takes twice as long as the file store (for append: per event; for the fold: per open)',
        'PostgreSQL is a local throwaway cluster (fsync=on, synchronous_commit on, shared_buffers 32MB) on the same 2 cores as the bench: its server work competes with the bench process, and there is no network latency; a remote server adds a round trip per checkpoint and per 5000-row read page',
        `setup, not timed: the 1M-event session written through the file store's writer in ${round(setupS.write)} s and copied into PostgreSQL through the store's create-with-prefix (the import/fork path) in ${round(setupS.copy)} s, then VACUUM ANALYZE (as a long-lived database is)`,
      ],
    };
  } finally {
    await postgres?.close();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) printResult(await run());
