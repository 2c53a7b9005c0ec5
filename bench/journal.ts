/**
 * Journal benchmark (issue #5 "Benchmark"): `npm run bench -- journal` (or `npx tsx bench/journal.ts`).
 *
 * 1. append: 100k events through `SessionJournal.append` — a loop-like mix, mostly stream chunks —
 *    with a checkpoint (write + fsync) every 100 events, against a bare JSONL writer doing the same
 *    (JSON.stringify each record, queue, write + fsync at the same checkpoints), interleaved. Reports
 *    CPU µs per event (the ratio) and wall events/s (fsync-bound, informational).
 * 2. fold: a 1M-event journal folded by `foldJournal` (streaming read, envelope checks, one immer
 *    draft), and by `foldEventsAsync(readJournal(path))` (the public async iterable, deep-frozen
 *    events), against a bare loop over the same file: read 1 MiB chunks, split on `\n`,
 *    `JSON.parse` each line. Each run is a fresh child process, so its peak RSS is its own; rounds
 *    are interleaved (bare, fold, read-fold, bare, …). Target: fold ≤ 2x the bare loop (CPU time).
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAssistantMessage, createToolResultMessage, createUserMessage } from '../runtime/llm/message.ts';
import type { StreamChunk } from '../runtime/llm/types.ts';
import { foldEventsAsync } from '../runtime/session/fold.ts';
import { createJournal } from '../runtime/session/journal.ts';
import { foldJournal, readJournal } from '../runtime/session/reader.ts';
import type { SessionJournal } from '../runtime/session/types.ts';
import { check, cpuMicros, envInt, inChild, isMain, answer, median, printResult, ratioSpread, round, spread, stat, type BenchResult } from './support.ts';

const APPEND_EVENTS = 100_000;
const FOLD_EVENTS = 1_000_000;

type Window = readonly [type: string, data: unknown][];

/** One "window" of 100 events the way a loop step journals them: chunks, then message and tool call. */
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
  out.push(['tool/start', { turn, step, callId }]);
  out.push(['tool/result', { turn, step, callId, message: createToolResultMessage({ id: `r-${window}`, callId, content: 'alpha\nbeta\n' }) }]);
  out.push(['step/end', { turn, step }]);
  return out;
}

function appendWindow(journal: SessionJournal, window: Window): void {
  for (const [type, data] of window) journal.append(type as 'step/start', data as never);
}

interface AppendSample {
  /** CPU µs per event (appends + checkpoints). */
  readonly cpuUsPerEvent: number;
  /** Wall-clock events per second (fsync-bound). */
  readonly eventsPerSec: number;
  readonly fileBytes: number;
}

/** 100k events through a FileJournal, checkpoint (write + fsync) after every window of 100. */
async function appendHarness(dir: string, id: string): Promise<AppendSample> {
  const journal = await createJournal({ dataDir: dir, id });
  const windows = APPEND_EVENTS / 100;
  const made: Window[] = [];
  for (let w = 0; w < windows; w++) made.push(makeWindow(1, w + 1, w)); // the data arrives from the loop: not timed
  const wall = performance.now();
  const cpu = cpuMicros();
  journal.append('turn/start', { turn: 1 });
  for (let w = 0; w < windows; w++) {
    appendWindow(journal, made[w]!);
    await journal.checkpoint();
  }
  const cpuUs = cpuMicros() - cpu;
  const ms = performance.now() - wall;
  await journal.close();
  return { cpuUsPerEvent: cpuUs / APPEND_EVENTS, eventsPerSec: APPEND_EVENTS / (ms / 1000), fileBytes: statSync(journal.path).size };
}

/** The baseline: a bare JSONL writer — stringify each record, queue, write + fsync at the same checkpoints. */
async function appendBare(dir: string, id: string): Promise<AppendSample> {
  const path = join(dir, `${id}.jsonl`);
  const fd = openSync(path, 'wx');
  const windows = APPEND_EVENTS / 100;
  const made: Window[] = [];
  for (let w = 0; w < windows; w++) made.push(makeWindow(1, w + 1, w));
  const wall = performance.now();
  const cpu = cpuMicros();
  let seq = 0;
  let queue: string[] = [`${JSON.stringify({ seq: ++seq, type: 'turn/start', atMs: Date.now(), data: { turn: 1 } })}\n`];
  for (let w = 0; w < windows; w++) {
    for (const [type, data] of made[w]!) queue.push(`${JSON.stringify({ seq: ++seq, type, atMs: Date.now(), data })}\n`);
    const buffer = Buffer.from(queue.join(''), 'utf8');
    queue = [];
    // The journal writes asynchronously; a sync write + fsync costs the same CPU and keeps this bare.
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (let offset = 0; offset < buffer.length; ) offset += writeSync(fd, buffer, offset);
    fsyncSync(fd);
  }
  const cpuUs = cpuMicros() - cpu;
  const ms = performance.now() - wall;
  closeSync(fd);
  return { cpuUsPerEvent: cpuUs / APPEND_EVENTS, eventsPerSec: APPEND_EVENTS / (ms / 1000), fileBytes: statSync(path).size };
}

/** The per-chunk hot path alone: chunk appends as a stream delivers them, checkpoint before each call of 100 chunks. */
async function chunkAppendMicros(dir: string): Promise<number> {
  const stream = await createJournal({ dataDir: dir, id: 'chunks' });
  stream.append('turn/start', { turn: 1 });
  let cpuUs = 0;
  for (let call = 0; call < APPEND_EVENTS / 100; call++) {
    await stream.checkpoint();
    for (let i = 0; i < 100; i++) {
      const data = { turn: 1, step: call + 1, chunk: { type: 'text-delta' as const, index: 0, text: `tok${i % 10} ` } };
      const before = cpuMicros();
      stream.append('assistant/chunk', data);
      cpuUs += cpuMicros() - before;
      if (i % 10 === 9) await new Promise((resolve) => setImmediate(resolve));
    }
  }
  await stream.close();
  return cpuUs / APPEND_EVENTS;
}

async function writeBigJournal(dir: string): Promise<string> {
  const journal = await createJournal({ dataDir: dir, id: 'fold' });
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
  return journal.path;
}

/** The bare loop: chunked read, split on `\n`, JSON.parse every line. */
async function bareParse(path: string): Promise<number> {
  const handle = await open(path, 'r');
  let buffer = Buffer.allocUnsafe(1 << 20);
  let filled = 0;
  let offset = 0;
  let count = 0;
  try {
    for (;;) {
      if (filled === buffer.length) {
        const bigger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(bigger, 0, 0, filled);
        buffer = bigger;
      }
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, offset + filled);
      filled += bytesRead;
      let from = 0;
      const view = buffer.subarray(0, filled);
      for (let at = view.indexOf(10, from); at !== -1; at = view.indexOf(10, from)) {
        JSON.parse(buffer.toString('utf8', from, at));
        count++;
        from = at + 1;
      }
      if (bytesRead === 0) break;
      buffer.copy(buffer, 0, from, filled);
      offset += from;
      filled -= from;
    }
  } finally {
    await handle.close();
  }
  return count;
}

interface ChildReport {
  readonly cpuMs: number;
  readonly wallMs: number;
  readonly maxRssMiB: number;
  readonly count: number;
}

type Reader = 'bare' | 'fold' | 'read-fold';

/** Runs one reader in a fresh process (so each peak RSS is its own). */
function readInChild(kind: Reader, path: string): Promise<ChildReport> {
  return inChild<ChildReport>(import.meta.url, ['--child', kind, path]);
}

async function child(kind: string, path: string): Promise<void> {
  const wall = performance.now();
  const cpu = cpuMicros();
  let count = 0;
  if (kind === 'bare') count = await bareParse(path);
  else if (kind === 'fold') count = (await foldJournal(path)).messages.length;
  else count = (await foldEventsAsync(readJournal(path))).messages.length;
  const report: ChildReport = { cpuMs: (cpuMicros() - cpu) / 1000, wallMs: performance.now() - wall, maxRssMiB: process.resourceUsage().maxRSS / 1024, count };
  answer(report);
}

const APPEND_ROUNDS = envInt('BENCH_JOURNAL_APPEND_ROUNDS', 3);
const FOLD_ROUNDS = envInt('BENCH_JOURNAL_FOLD_ROUNDS', 3);

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'harness-bench-journal-'));
  try {
    // Append: warm up both writers once, then interleave.
    await appendHarness(dir, 'warm');
    await appendBare(dir, 'warm-bare');
    const harness: AppendSample[] = [];
    const bare: AppendSample[] = [];
    for (let round = 0; round < APPEND_ROUNDS; round++) {
      const pair = round % 2 === 0 ? (['h', 'b'] as const) : (['b', 'h'] as const);
      for (const which of pair) {
        if (which === 'h') harness.push(await appendHarness(dir, `append-${round}`));
        else bare.push(await appendBare(dir, `bare-${round}`));
      }
    }
    const chunkUs = await chunkAppendMicros(dir);
    const appendRatios = harness.map((h, i) => h.cpuUsPerEvent / bare[i]!.cpuUsPerEvent);

    // Fold: one 1M-event journal, readers in fresh processes, interleaved rounds after a page-cache warm-up.
    const path = await writeBigJournal(dir);
    const sizeMiB = statSync(path).size / 2 ** 20;
    await readInChild('bare', path);
    const reports: Record<Reader, ChildReport[]> = { bare: [], fold: [], 'read-fold': [] };
    const order: Reader[] = ['bare', 'fold', 'read-fold'];
    for (let round = 0; round < FOLD_ROUNDS; round++) {
      for (let k = 0; k < order.length; k++) {
        const kind = order[(k + round) % order.length]!;
        reports[kind].push(await readInChild(kind, path));
      }
    }
    const cpu = (kind: Reader) => reports[kind].map((r) => r.cpuMs);
    const perRound = (kind: Reader) => reports[kind].map((r, i) => r.cpuMs / reports.bare[i]!.cpuMs);
    const foldRow = (label: string, kind: Reader) => {
      const list = reports[kind];
      const c = stat(cpu(kind));
      return {
        reader: label,
        'CPU ms': spread(c),
        'wall ms (median)': round(median(list.map((r) => r.wallMs))),
        'events/s (CPU)': Math.round(FOLD_EVENTS / (c.median / 1000)),
        'peak RSS MiB': spread(stat(list.map((r) => r.maxRssMiB))),
        'ratio to bare': kind === 'bare' ? '1.00x (baseline)' : ratioSpread(stat(perRound(kind))),
      };
    };
    const foldRatio = median(perRound('fold'));

    const appendRow = (label: string, list: AppendSample[], baseline: boolean) => ({
      writer: label,
      'CPU µs/event': spread(stat(list.map((s) => s.cpuUsPerEvent))),
      'wall events/s (median, fsync-bound)': Math.round(median(list.map((s) => s.eventsPerSec))),
      'file MiB': round(list[0]!.fileBytes / 2 ** 20),
      'ratio to bare': baseline ? '1.00x (baseline)' : ratioSpread(stat(appendRatios)),
    });
    return {
      name: 'journal',
      summary: 'append 100k events (checkpoint every 100) vs a bare JSONL writer; fold a 1M-event journal vs a bare split + JSON.parse loop (issue #5)',
      tables: [
        { title: 'fold of a 1M-event journal', rows: [foldRow('bare split + JSON.parse (baseline)', 'bare'), foldRow('foldJournal', 'fold'), foldRow('foldEventsAsync(readJournal())', 'read-fold')] },
        { title: 'append 100k events, checkpoint every 100', rows: [appendRow('bare JSONL writer (baseline)', bare, true), appendRow('FileJournal.append', harness, false)] },
        { title: 'assistant/chunk append alone', rows: [{ measure: 'CPU µs per assistant/chunk append (validate + freeze + fold + queue; the line is made at write time)', value: round(chunkUs) }] },
      ],
      targets: [
        check('foldJournal / bare parse loop, 1M events (CPU)', ratioSpread(stat(perRound('fold'))), '≤ 2x', foldRatio <= 2),
        check('foldEventsAsync(readJournal()) / bare parse loop (CPU)', ratioSpread(stat(perRound('read-fold'))), '— (informational)', null),
        check('FileJournal.append / bare JSONL writer, 100k events (CPU)', ratioSpread(stat(appendRatios)), '— (no target; events/s reported)', null),
      ],
      notes: [
        `fold: ${FOLD_EVENTS} events, ${round(sizeMiB)} MiB, ${reports.fold[0]!.count} surface messages; ${FOLD_ROUNDS} interleaved rounds, each reader a fresh process (peak RSS = its maxRSS), after a page-cache warm-up; CPU = process user + system; ratio = median of the per-round ratios (paired by round), range = their min–max`,
        'foldJournal = streaming read + envelope checks + one immer draft; foldEventsAsync(readJournal()) = deep-frozen events through an async iterable',
        `append: ${APPEND_ROUNDS} interleaved rounds; one window = step/start, 95 chunks, assistant/message, tool/call, tool/start, tool/result, step/end, then a checkpoint (write + fsync); the bare writer stringifies the same records and writes + fsyncs at the same points`,
        'chunk append: assistant/chunk appends alone, the event loop turning every 10 chunks as a stream would (serialisation happens when the queue is written, outside these calls: it is in the append rows above)',
      ],
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  if (process.argv[2] === '--child') await child(process.argv[3]!, process.argv[4]!);
  else printResult(await run());
}
