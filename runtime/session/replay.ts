/**
 * Replay (DESIGN "Replay"): fork a session from a prefix, list sessions, and find the recorded
 * model calls of a journal (what a cassette serves).
 */
import { randomUUID } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { HarnessError } from '../kernel/errors.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import type { FinishReason, StreamChunk, TokenUsage } from '../llm/types.ts';
import type { AnySessionEvent, RequestHeader, SessionEvent, SessionHeader } from './events.ts';
import { initialState, reduceEvent } from './fold.ts';
import { createJournalFile, type JournalIoOptions, type OpenedJournal } from './journal.ts';
import { scanLines } from './lines.ts';
import { assertSessionId, journalPath, resolveSessionPath, sessionsDir } from './paths.ts';
import { assertForkComplete, parseEventLine, parseHeaderLine, readJournalHeader, scanJournal } from './reader.ts';
import { planRepair } from './repair.ts';
import { SnapshotReader, type RecordedRequest } from './snapshot.ts';
import type { SessionState } from './types.ts';

/** Options of `forkSession(source, options)`. */
export interface ForkOptions extends JournalIoOptions {
  /** The last source event the fork keeps (0 keeps none). */
  readonly atSeq: number;
  /** Where the new journal goes (and where a source id is looked up). */
  readonly dataDir?: string;
  /** The new session's id (default: a random UUID). */
  readonly id?: string;
  /**
   * `atSeq` inside an open turn (or compaction, or with unanswered tool calls) is refused
   * (`FORK_INSIDE_TURN`) unless this is true: then the fork closes it with the same synthetic
   * events a crash repair appends (`turn/end{interrupted}`, `TOOL_NOT_STARTED` results, …).
   */
  readonly closeOpenTurn?: boolean;
}

/**
 * Starts a new session seeded with the events `1..atSeq` of `source` (an id or a path), and opens
 * it for writing. The events are copied verbatim — same `seq`, `type`, `atMs`, `data`, byte for
 * byte — so the fork folds on its own; its header names `parent: { sessionId, seq: atSeq }`.
 * @throws HarnessError `FORK_OUT_OF_RANGE`, `FORK_INSIDE_TURN`, the read errors of the source,
 *   `JOURNAL_EXISTS` / `JOURNAL_LOCKED` for the new id.
 */
export async function forkSession(source: string, options: ForkOptions): Promise<OpenedJournal> {
  const sourcePath = resolveSessionPath(source, options.dataDir);
  const atSeq = options.atSeq;
  if (!Number.isInteger(atSeq) || atSeq < 0) {
    throw new HarnessError('FORK_OUT_OF_RANGE', `forkSession needs atSeq ≥ 0 (an integer); got ${String(atSeq)}.`, { details: { atSeq } });
  }
  const sourceHeader = await readJournalHeader(sourcePath);
  const id = options.id ?? randomUUID();
  assertSessionId(id);
  const prefix = await scanJournal(sourcePath, { stopAtSeq: atSeq, trackLiveCall: true });
  if (prefix.lastSeq < atSeq) {
    throw new HarnessError('FORK_OUT_OF_RANGE', `Session ${sourceHeader.id} has ${prefix.lastSeq} events; it cannot be forked at seq ${atSeq}.`, {
      details: { sessionId: sourceHeader.id, atSeq, lastSeq: prefix.lastSeq },
    });
  }
  const state = prefix.state;
  const closing = planRepair(state, prefix.liveCall, { kind: 'fork', atSeq });
  if (closing.length > 0 && options.closeOpenTurn !== true) {
    const open = state.openTurn;
    const where = open !== undefined ? `inside turn ${open.turn}${prefix.openTurnSeq !== undefined ? ` (started at seq ${prefix.openTurnSeq})` : ''}` : state.compacting ? 'inside a compaction' : 'with unanswered tool calls';
    const before = prefix.openTurnSeq !== undefined ? ` Fork at seq ${prefix.openTurnSeq - 1} (before that turn) or at the seq of its turn/end,` : '';
    throw new HarnessError('FORK_INSIDE_TURN', `Seq ${atSeq} of session ${sourceHeader.id} is ${where}.${before} or pass { closeOpenTurn: true } to close it with synthetic events in the fork.`, {
      details: { sessionId: sourceHeader.id, atSeq, ...(prefix.openTurnSeq !== undefined ? { turnStartSeq: prefix.openTurnSeq } : {}) },
    });
  }
  const header: SessionHeader = deepFreeze({
    type: 'session',
    version: 1,
    id,
    createdAtMs: (options.now ?? Date.now)(),
    ...(sourceHeader.cwd !== undefined ? { cwd: sourceHeader.cwd } : {}),
    parent: { sessionId: sourceHeader.id, seq: atSeq },
  });
  const journal = await createJournalFile(journalPath(id, options.dataDir), header, options, {
    state: Object.freeze({ ...state, sessionId: id }),
    lastSeq: atSeq,
    copy: async (write) => {
      let header = true;
      await scanLines(sourcePath, (line) => {
        if (header) {
          header = false;
          return;
        }
        const event = parseEventLine(line.text);
        if (typeof event === 'string' || event.seq > atSeq) return false;
        write(`${line.text}\n`);
        return event.seq < atSeq;
      });
    },
  });
  const syntheticEvents: AnySessionEvent[] = [];
  try {
    for (const planned of closing) syntheticEvents.push((await journal.append(planned.type, planned.data as never)) as AnySessionEvent);
    await journal.checkpoint();
  } catch (error) {
    await journal.close().catch(() => undefined);
    throw error;
  }
  return { journal, repairs: { syntheticEvents } };
}

/** What `listSessions` tells about one session (read cheaply: chunk lines are not parsed). */
export interface SessionSummary {
  readonly id: string;
  readonly path: string;
  readonly createdAtMs?: number;
  readonly title?: string;
  /** The session's workspace (its header's `cwd`), when it has one. */
  readonly cwd?: string;
  readonly turnCount: number;
  /** Token totals of every `assistant/message` and `compaction/summary`. */
  readonly usage: TokenUsage;
  readonly eventCount: number;
  /** `atMs` of the last event, else the file's modification time. */
  readonly lastUpdateAtMs: number;
  readonly parent?: SessionHeader['parent'];
  readonly importedFrom?: SessionHeader['importedFrom'];
  /** The session could not be read (its error code and message). */
  readonly error?: { readonly code: string; readonly message: string };
}

const ENVELOPE = /^\{"seq":(\d+),"type":"([^"\\]+)","atMs":(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?),/;
const SUMMARY_TYPES = new Set(['turn/start', 'session/title', 'assistant/message', 'compaction/summary']);

/**
 * The sessions in `<dataDir>/sessions`, most recently updated first (unreadable ones last, with
 * their `error`). Each file is streamed once;
 * only the lines that matter (turns, titles, usage) are parsed — the writer's fixed key order lets
 * every other line (chunks above all) be skipped by its prefix.
 */
export async function listSessions(dataDir?: string): Promise<SessionSummary[]> {
  const dir = sessionsDir(dataDir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const out: SessionSummary[] = [];
  for (const name of names) {
    if (!name.endsWith('.jsonl')) continue;
    out.push(await summarize(join(dir, name)));
  }
  return out.sort((a, b) => Number(a.error !== undefined) - Number(b.error !== undefined) || b.lastUpdateAtMs - a.lastUpdateAtMs || a.id.localeCompare(b.id));
}

async function summarize(path: string): Promise<SessionSummary> {
  let header: SessionHeader | undefined;
  let title: string | undefined;
  let turnCount = 0;
  let eventCount = 0;
  let lastAtMs: number | undefined;
  const usage: Record<string, number> = {};
  const add = (value: TokenUsage | undefined): void => {
    if (value === undefined || value === null) return;
    for (const [key, count] of Object.entries(value)) if (typeof count === 'number') usage[key] = (usage[key] ?? 0) + count;
  };
  try {
    await scanLines(path, (line) => {
      if (header === undefined) {
        header = parseHeaderLine(line.text, path, line.terminated);
        return;
      }
      if (!line.terminated) return;
      const match = ENVELOPE.exec(line.text);
      let type: string;
      let event: AnySessionEvent | undefined;
      if (match !== null) {
        type = match[2]!;
        lastAtMs = Number(match[3]);
        if (!SUMMARY_TYPES.has(type)) {
          eventCount++;
          return;
        }
      }
      const parsed = parseEventLine(line.text);
      if (typeof parsed === 'string') return;
      event = parsed;
      type = event.type;
      lastAtMs = event.atMs;
      eventCount++;
      if (type === 'turn/start') turnCount++;
      else if (type === 'session/title') title = (event as SessionEvent<'session/title'>).data.title;
      else if (type === 'assistant/message') add((event as SessionEvent<'assistant/message'>).data.usage);
      else if (type === 'compaction/summary') add((event as SessionEvent<'compaction/summary'>).data.usage);
    });
  } catch (error) {
    const info = HarnessError.is(error) ? { code: error.code, message: error.message } : { code: 'UNREADABLE', message: String((error as Error)?.message ?? error) };
    const mtime = await stat(path).then((s) => s.mtimeMs, () => 0);
    return { id: header?.id ?? fileId(path), path, turnCount: 0, usage: {}, eventCount: 0, lastUpdateAtMs: mtime, error: info };
  }
  if (header === undefined) {
    return { id: fileId(path), path, turnCount: 0, usage: {}, eventCount: 0, lastUpdateAtMs: 0, error: { code: 'JOURNAL_HEADER', message: `${path} is empty.` } };
  }
  const h: SessionHeader = header;
  if (h.parent !== undefined && eventCount < h.parent.seq) {
    try {
      assertForkComplete(path, h, eventCount);
    } catch (error) {
      const info = { code: (error as HarnessError).code, message: (error as Error).message };
      return { id: h.id, path, turnCount: 0, usage: {}, eventCount, lastUpdateAtMs: await stat(path).then((s) => s.mtimeMs, () => 0), parent: h.parent, error: info };
    }
  }
  const lastUpdateAtMs = lastAtMs ?? (await stat(path).then((s) => s.mtimeMs, () => h.createdAtMs));
  return {
    id: h.id,
    path,
    createdAtMs: h.createdAtMs,
    ...(title !== undefined ? { title } : {}),
    ...(h.cwd !== undefined ? { cwd: h.cwd } : {}),
    turnCount,
    usage,
    eventCount,
    lastUpdateAtMs,
    ...(h.parent ? { parent: h.parent } : {}),
    ...(h.importedFrom ? { importedFrom: h.importedFrom } : {}),
  };
}

function fileId(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return name.endsWith('.jsonl') ? name.slice(0, -'.jsonl'.length) : name;
}

/** One model call as a journal recorded it (what a cassette replays). */
export interface RecordedCall {
  /** 0-based position among all recorded calls. */
  readonly index: number;
  readonly turn: number;
  readonly step: number;
  /** 0-based position among the calls of its (turn, step): retries and recoveries add calls. */
  readonly attempt: number;
  /** The exact recorded chunks, in order (the finish chunk keeps its full replay envelope). */
  readonly chunks: readonly StreamChunk[];
  readonly firstSeq: number;
  readonly lastSeq: number;
  /** The request header in force when the call was made. */
  readonly header?: RequestHeader;
  /** The model-visible request, rebuilt from its `request/snapshot` (absent in journals written before snapshots). */
  readonly request?: RecordedRequest;
  /** Surface length (the message count of the request) when the call was made. */
  readonly messageCount: number;
  /** The state just before the call's first chunk (its surface is the request's history). */
  readonly stateBefore: SessionState;
  /** The finish, when the recording has a finish chunk (absent: the call was cut). */
  readonly finish?: FinishReason;
  /** The `assistant/message` assembled from this call, when one was journaled. */
  readonly message?: SessionEvent<'assistant/message'>;
}

/**
 * Splits a journal's `assistant/chunk` records into model calls. A call is a run of chunks of one
 * (turn, step) that starts after `step/start`, `llm/retry`, an `assistant/message`, a finish chunk
 * or any change of (turn, step), and ends with its finish chunk (or where the recording stops
 * streaming it). So a retried step has one call per attempt, and a call re-made after a recovery
 * (a failed call, a compaction, the same step) is a call of its own.
 */
export function recordedCalls(events: Iterable<AnySessionEvent>, init?: SessionState): RecordedCall[] {
  const calls: (RecordedCall & { chunks: StreamChunk[]; lastSeq: number; finish?: FinishReason; message?: SessionEvent<'assistant/message'> })[] = [];
  let state = init ?? initialState('');
  let current: (typeof calls)[number] | undefined;
  const perStep = new Map<string, number>();
  const snapshots = new SnapshotReader();
  let request: RecordedRequest | undefined;
  for (const event of events) {
    const type = event.type;
    const rebuilt = snapshots.push(event);
    if (rebuilt !== undefined) {
      request = rebuilt;
      continue;
    }
    if (type === 'assistant/chunk') {
      const { turn, step, chunk } = (event as SessionEvent<'assistant/chunk'>).data;
      if (current === undefined || current.finish !== undefined || current.turn !== turn || current.step !== step) {
        const key = `${turn}:${step}`;
        const attempt = perStep.get(key) ?? 0;
        perStep.set(key, attempt + 1);
        current = {
          index: calls.length,
          turn,
          step,
          attempt,
          chunks: [],
          firstSeq: event.seq,
          lastSeq: event.seq,
          ...(state.header !== undefined ? { header: state.header } : {}),
          ...(request !== undefined ? { request } : {}),
          messageCount: state.messages.length,
          stateBefore: state,
        };
        calls.push(current);
        request = undefined;
      }
      current.chunks.push(chunk);
      current.lastSeq = event.seq;
      if (chunk.type === 'finish') current.finish = chunk.finish;
      continue;
    }
    if (type === 'assistant/message') {
      const data = (event as SessionEvent<'assistant/message'>).data;
      if (current !== undefined && current.turn === data.turn && current.step === data.step && current.message === undefined) current.message = event as SessionEvent<'assistant/message'>;
      current = undefined;
    } else if (type === 'step/start' || type === 'step/end' || type === 'llm/retry' || type === 'turn/start' || type === 'turn/end') {
      current = undefined;
    }
    state = reduceEvent(state, event);
  }
  return calls;
}
