/**
 * Reading journals (DESIGN "Sessions and the journal", "Replay": read → fold → state at any seq).
 *
 * Every reader streams the file line by line (memory does not grow with the file) and applies the
 * same rules:
 * - line 1 is the header; an unreadable one is `JOURNAL_HEADER`, another `version` is
 *   `JOURNAL_VERSION` (naming the version found and the one this build reads);
 * - each other line is one event with `seq` contiguous from 1;
 * - a last line with no `\n`, or an unparseable last line, is a torn tail: a crash cut the last
 *   write. Readers skip it (and say so); `openJournal` moves it aside to a sidecar file;
 * - a bad line anywhere else is `JOURNAL_CORRUPT` naming the file and line — unless `salvage`,
 *   a read-only mode that skips it and reports it;
 * - an unknown event type that is not `"ignorable": true` is `UNKNOWN_EVENT_TYPE`.
 * Readers never modify the file.
 */
import { deepFreeze } from '../kernel/freeze.ts';
import { HarnessError } from '../kernel/errors.ts';
import { BlockAssembler } from '../llm/assembler.ts';
import type { FinishReason, StreamChunk } from '../llm/types.ts';
import type { AnySessionEvent, SessionHeader } from './events.ts';
import { Folder, initialState } from './fold.ts';
import { lineBatches, readFirstLine, type RawLine } from './lines.ts';
import { assertNotPartial, resolveSessionPath } from './paths.ts';
import { shapeProblem } from './shape.ts';
import type { JournalStore, ReadRange } from './store.ts';
import type { SessionState } from './types.ts';

/**
 * Where a reader gets a session's lines: a journal file, or any store (`storeSource`). `name`
 * is what messages call it (the file path, or the store's location of the session).
 */
export interface LineSource {
  readonly name: string;
  /** The lines, header first, in batches. */
  readonly batches: AsyncIterable<readonly RawLine[]>;
  /** Whole batches or nothing are written: an unreadable last line is corruption, never a torn write. */
  readonly atomic?: boolean;
  /** The first event seq the lines start at (a range read; default 1). */
  readonly fromSeq?: number;
  /** The last event seq of a range read. */
  readonly toSeq?: number;
}

/** The lines of a journal file. @throws HarnessError `NOT_A_JOURNAL_FILE` for a fork's temporary `.partial-<pid>` file. */
export function fileSource(path: string): LineSource {
  assertNotPartial(path);
  return { name: path, batches: lineBatches(path) };
}

/** The lines of session `id` in `store`. */
export function storeSource(store: JournalStore, id: string, range?: ReadRange): LineSource {
  return {
    name: store.locationOf(id),
    batches: store.read(id, range),
    atomic: store.atomicWrites,
    ...(range?.fromSeq !== undefined && range.fromSeq > 1 ? { fromSeq: range.fromSeq } : {}),
    ...(range?.toSeq !== undefined ? { toSeq: range.toSeq } : {}),
  };
}

/** The journal format version this build reads and writes. */
export const JOURNAL_FORMAT_VERSION = 1;

/** A line a salvage read skipped, or the torn tail a reader left out. */
export interface SkippedLine {
  readonly lineNumber: number;
  /** Byte range in the file. */
  readonly start: number;
  readonly end: number;
  readonly reason: string;
}

/** Parses and checks a header line. @throws HarnessError `JOURNAL_HEADER`, `JOURNAL_VERSION`. */
export function parseHeaderLine(text: string | undefined, path: string, terminated = true): SessionHeader {
  if (text === undefined) {
    throw new HarnessError('JOURNAL_HEADER', `${path}:1: the journal is empty; line 1 must be a session header {"type":"session","version":${JOURNAL_FORMAT_VERSION},"id":…}.`, {
      details: { path, line: 1 },
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HarnessError(
      'JOURNAL_HEADER',
      `${path}:1: the header line is not JSON${terminated ? '' : ' (and has no line end: the file was cut while it was created)'} (${(error as Error).message}). This file is not a readable Harness journal; the file was left as it is.`,
      { details: { path, line: 1 } },
    );
  }
  const header = value as Partial<SessionHeader> & Record<string, unknown>;
  if (typeof header !== 'object' || header === null || Array.isArray(header) || header.type !== 'session') {
    throw new HarnessError(
      'JOURNAL_HEADER',
      `${path}:1: line 1 is not a session header (it needs "type":"session"): this file is not a Harness journal, or its header line was damaged. The file was left as it is.`,
      {
        details: { path, line: 1 },
      },
    );
  }
  if (header.version !== JOURNAL_FORMAT_VERSION) {
    const found = JSON.stringify(header.version);
    const dsh = header.version === 0 && 'delegationDepth' in header;
    const direction =
      typeof header.version === 'number' && header.version > JOURNAL_FORMAT_VERSION
        ? `It was written by a newer Harness: upgrade Harness to a version that reads journal version ${header.version}.`
        : dsh
          ? 'It looks like a DeepSeek Harness session (format version 0): import it with `harness import dsh <file>` (importDshSession / writeImportedSession).'
          : `Convert it with the Harness version that wrote it, or upgrade Harness.`;
    throw new HarnessError('JOURNAL_VERSION', `${path}:1: journal format version ${found}; this build reads version ${JOURNAL_FORMAT_VERSION}. ${direction} The file was left as it is.`, {
      details: { path, line: 1, version: header.version ?? null, supported: JOURNAL_FORMAT_VERSION },
    });
  }
  if (typeof header.id !== 'string' || header.id === '' || typeof header.createdAtMs !== 'number') {
    throw new HarnessError('JOURNAL_HEADER', `${path}:1: the session header needs a string "id" and a number "createdAtMs". The file was left as it is.`, { details: { path, line: 1 } });
  }
  return header as SessionHeader;
}

/** Parses one event line: the event, or why it is not one. */
export function parseEventLine(text: string): AnySessionEvent | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `not JSON (${(error as Error).message})`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const event = value as { seq?: unknown; type?: unknown; atMs?: unknown; data?: unknown; ignorable?: unknown };
  if (typeof event.seq !== 'number' || !Number.isInteger(event.seq) || event.seq < 1) return 'no positive integer "seq"';
  if (typeof event.type !== 'string' || event.type === '') return 'no string "type"';
  if (typeof event.atMs !== 'number') return 'no number "atMs"';
  if (!('data' in event)) return 'no "data"';
  if (event.ignorable !== undefined && event.ignorable !== true) return '"ignorable" is neither true nor absent';
  return value as AnySessionEvent;
}

/** The model call a scan ended in the middle of (for crash repair): its chunks, assembled. */
export interface LiveCall {
  readonly turn: number;
  readonly step: number;
  readonly assembler: BlockAssembler;
  /** The finish of the call, when its finish chunk was journaled. */
  finish: FinishReason | undefined;
  chunkCount: number;
}

export interface ScanOptions {
  /** Skip (and report) corrupt lines instead of failing. Read-only callers only. */
  readonly salvage?: boolean;
  /** Stop after the event with this seq. */
  readonly stopAtSeq?: number;
  /** Called for every event (before it is folded). `raw` is its line text. */
  readonly onEvent?: (event: AnySessionEvent, raw: RawLine) => void;
  /** Fold the events (default true). */
  readonly fold?: boolean;
  /** Follow the last model call's chunks (for repair). */
  readonly trackLiveCall?: boolean;
}

export interface ScanResult {
  readonly path: string;
  readonly header: SessionHeader;
  readonly headerLine: RawLine;
  readonly state: SessionState;
  /** Seq of the last event read (0 for none). */
  readonly lastSeq: number;
  readonly eventCount: number;
  /** Byte offset just past the last complete line kept. */
  readonly keptBytes: number;
  /** File size read. */
  readonly size: number;
  /** A torn last line (left out of the fold). */
  readonly tornTail?: SkippedLine;
  /** Lines a salvage read skipped. */
  readonly skipped: readonly SkippedLine[];
  readonly liveCall?: LiveCall;
  /** Seq of the `turn/start` of the turn still open at the end, if any. */
  readonly openTurnSeq?: number;
}

/**
 * Reads a journal once, streaming: checks header and lines, folds (one immer draft), and notes what
 * a repair needs. Never writes.
 * @throws HarnessError `JOURNAL_NOT_FOUND`, `JOURNAL_HEADER`, `JOURNAL_VERSION`, `JOURNAL_CORRUPT`,
 *   `UNKNOWN_EVENT_TYPE` (file and line in the message and `failure.path` / `failure.line`).
 */
export async function scanJournal(from: string | LineSource, options: ScanOptions = {}): Promise<ScanResult> {
  const source = typeof from === 'string' ? fileSource(from) : from;
  const path = source.name;
  const salvage = options.salvage === true;
  const fold = options.fold !== false;
  const track = options.trackLiveCall === true;
  let header: SessionHeader | undefined;
  let headerLine: RawLine | undefined;
  let folder: Folder | undefined;
  let lastSeq = 0;
  let eventCount = 0;
  let keptBytes = 0;
  let pendingBad: BadLine | undefined;
  let tornTail: SkippedLine | undefined;
  let liveCall: LiveCall | undefined;
  let openTurnSeq: number | undefined;
  const skipped: SkippedLine[] = [];

  const corrupt = (bad: BadLine): void => {
    if (salvage) {
      skipped.push(bad);
      return;
    }
    throw corruptError(path, bad);
  };

  let size = 0;
  const onLine = (line: RawLine): boolean | void => {
    if (header === undefined) {
      header = parseHeaderLine(line.text, path, line.terminated);
      if (!line.terminated) {
        throw new HarnessError('JOURNAL_HEADER', `${path}:1: the header line has no line end (the file was cut while it was created). The file was left as it is.`, { details: { path, line: 1 } });
      }
      headerLine = line;
      keptBytes = line.end;
      folder = new Folder(initialState(header.id));
      // Seq 0 keeps no event: stop before seq 1 is read (and folded).
      return options.stopAtSeq !== undefined && options.stopAtSeq <= 0 ? false : undefined;
    }
    if (pendingBad !== undefined) {
      corrupt(pendingBad);
      pendingBad = undefined;
    }
    if (!line.terminated) {
      tornTail = { lineNumber: line.lineNumber, start: line.start, end: line.end, reason: 'the last line has no line end (a write was cut)' };
      return;
    }
    const parsed = parseEventLine(line.text);
    if (typeof parsed === 'string') {
      pendingBad = { lineNumber: line.lineNumber, start: line.start, end: line.end, reason: parsed };
      return;
    }
    const expected = lastSeq + 1;
    if (parsed.seq !== expected && !(salvage && parsed.seq > lastSeq)) {
      pendingBad = seqProblem(line, parsed.seq, expected);
      // A seq error is never a torn write: report it at once.
      corrupt(pendingBad);
      pendingBad = undefined;
      return;
    }
    // A complete line of the wrong shape is never a torn write either.
    const shape = shapeProblem(parsed.type, parsed.data);
    if (shape !== undefined) {
      corrupt({ lineNumber: line.lineNumber, start: line.start, end: line.end, reason: shape });
      return;
    }
    try {
      options.onEvent?.(parsed, line);
      if (fold) folder!.apply(parsed);
    } catch (error) {
      if (HarnessError.is(error) && (error.code === 'UNKNOWN_EVENT_TYPE' || error.code === 'INVALID_EVENT_DATA')) {
        if (salvage) {
          skipped.push({ lineNumber: line.lineNumber, start: line.start, end: line.end, reason: error.message });
          return;
        }
        throw new HarnessError(error.code, `${path}:${line.lineNumber}: ${error.message} The file was left as it is.`, {
          details: { ...error.failure, path, line: line.lineNumber },
          cause: error,
        });
      }
      throw error;
    }
    lastSeq = parsed.seq;
    eventCount++;
    keptBytes = line.end;
    if (track) {
      const type = parsed.type;
      if (type === 'assistant/chunk') {
        const { turn, step, chunk } = parsed.data as { turn: number; step: number; chunk: StreamChunk };
        if (liveCall === undefined || liveCall.finish !== undefined || liveCall.turn !== turn || liveCall.step !== step) {
          liveCall = { turn, step, assembler: new BlockAssembler(), finish: undefined, chunkCount: 0 };
        }
        try {
          liveCall.assembler.push(chunk);
        } catch {
          // a malformed chunk adds nothing to what a repair can keep
        }
        liveCall.chunkCount++;
        if (chunk?.type === 'finish') liveCall.finish = chunk.finish;
      } else if (type === 'turn/start') {
        liveCall = undefined;
        openTurnSeq = parsed.seq;
      } else if (type === 'turn/end') {
        liveCall = undefined;
        openTurnSeq = undefined;
      } else if (type === 'step/start' || type === 'step/end' || type === 'llm/retry' || type === 'assistant/message') {
        liveCall = undefined;
      }
    }
    if (options.stopAtSeq !== undefined && lastSeq >= options.stopAtSeq) return false;
  };
  try {
    scan: for await (const lines of source.batches) {
      for (const line of lines) {
        size = line.end;
        if (onLine(line) === false) break scan;
      }
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === 'ENOENT') {
      throw new HarnessError('JOURNAL_NOT_FOUND', `No journal at ${path}.`, { details: { path } });
    }
    throw error;
  }
  if (header === undefined) parseHeaderLine(undefined, path);
  if (pendingBad !== undefined) {
    // The last line is complete but unreadable: a torn write (e.g. a tail of zero bytes) — except
    // in a store that writes whole batches, where it is damage.
    if (source.atomic === true) corrupt(pendingBad);
    else tornTail = { ...pendingBad, reason: `the last line is unreadable (${pendingBad.reason})` };
  }
  const reachedEnd = options.stopAtSeq === undefined || lastSeq < options.stopAtSeq;
  if (reachedEnd && !salvage) assertForkComplete(path, header!, lastSeq);
  return {
    path,
    header: header!,
    headerLine: headerLine!,
    state: folder!.finish(),
    lastSeq,
    eventCount,
    keptBytes,
    size,
    ...(tornTail ? { tornTail } : {}),
    skipped,
    ...(liveCall ? { liveCall } : {}),
    ...(openTurnSeq !== undefined ? { openTurnSeq } : {}),
  };
}

/** Options of `readJournal`. */
export interface ReadJournalOptions {
  /** Skip corrupt middle lines instead of failing (they are reported to `onSkip`). */
  readonly salvage?: boolean;
  /** Told about every line left out: a torn tail, or a line a salvage read skipped. */
  readonly onSkip?: (line: SkippedLine) => void;
  /**
   * Told when a salvage read finds seqs missing (a line removed or lost): seqs `fromSeq`..`toSeq`
   * (inclusive) are not in the file, and line `lineNumber` holds seq `toSeq + 1`. Nothing is
   * skipped for it — the events around the hole are read.
   */
  readonly onGap?: (gap: SeqGap) => void;
}

/** Seqs a journal lacks: `fromSeq`..`toSeq` inclusive, before line `lineNumber` (see `ReadJournalOptions.onGap`). */
export interface SeqGap {
  readonly lineNumber: number;
  readonly fromSeq: number;
  readonly toSeq: number;
}

/** A line {@link corruptError} reports: `hole` when seqs are missing before it (the line itself is fine). */
type BadLine = SkippedLine & { readonly hole?: true };

/** The line whose seq does not follow: seqs missing before it (a hole), or a seq that goes back. */
function seqProblem(line: RawLine, seq: number, expected: number): BadLine {
  const at = { lineNumber: line.lineNumber, start: line.start, end: line.end };
  if (seq < expected) return { ...at, reason: `seq ${seq} where ${expected} was expected` };
  const missing = seq === expected + 1 ? `seq ${expected} is` : `seqs ${expected}–${seq - 1} are`;
  return { ...at, reason: `${missing} missing: this line holds seq ${seq} where ${expected} was expected`, hole: true };
}

/**
 * The events of a journal, streaming, in seq order (the header is checked, not yielded). Each
 * event is deep-frozen. A torn tail is left out (reported to `onSkip`).
 * @throws like {@link scanJournal} (not for unknown ignorable types; unknown non-ignorable types
 *   are yielded — folding them is what fails).
 */
export async function* readJournal(from: string | LineSource, options: ReadJournalOptions = {}): AsyncGenerator<AnySessionEvent, void, undefined> {
  const source = typeof from === 'string' ? fileSource(from) : from;
  const path = source.name;
  const salvage = options.salvage === true;
  let header: SessionHeader | undefined;
  let lastSeq = (source.fromSeq ?? 1) - 1;
  let pendingBad: SkippedLine | undefined;
  let tornTail: SkippedLine | undefined;
  /** Lines a salvage read skipped since the last event read: each held a seq, so a gap that size is no hole. */
  let skippedSinceEvent = 0;
  const corrupt = (bad: BadLine, holdsNextSeq = true): void => {
    if (salvage) {
      if (holdsNextSeq) skippedSinceEvent++;
      options.onSkip?.(bad);
      return;
    }
    throw corruptError(path, bad);
  };
  try {
    for await (const lines of source.batches) {
      const events: AnySessionEvent[] = [];
      for (const line of lines) {
        if (header === undefined) {
          const parsedHeader = parseHeaderLine(line.text, path, line.terminated);
          if (!line.terminated) throw new HarnessError('JOURNAL_HEADER', `${path}:1: the header line has no line end (the file was cut while it was created).`, { details: { path, line: 1 } });
          header = parsedHeader;
          continue;
        }
        if (pendingBad !== undefined) {
          corrupt(pendingBad);
          pendingBad = undefined;
        }
        if (!line.terminated) {
          tornTail = { lineNumber: line.lineNumber, start: line.start, end: line.end, reason: 'the last line has no line end (a write was cut)' };
          continue;
        }
        const parsed = parseEventLine(line.text);
        if (typeof parsed === 'string') {
          pendingBad = { lineNumber: line.lineNumber, start: line.start, end: line.end, reason: parsed };
          continue;
        }
        if (parsed.seq !== lastSeq + 1) {
          if (!(salvage && parsed.seq > lastSeq)) {
            corrupt(seqProblem(line, parsed.seq, lastSeq + 1), false); // a seq gone back fills no hole
            continue;
          }
          // Seqs the skipped lines held are not missing (their lines were said); what is left is a hole.
          if (parsed.seq - 1 - lastSeq > skippedSinceEvent) options.onGap?.({ lineNumber: line.lineNumber, fromSeq: lastSeq + 1 + skippedSinceEvent, toSeq: parsed.seq - 1 });
        }
        // From here the line's seq is known and in order: the hole count starts again after it.
        skippedSinceEvent = 0;
        const shape = shapeProblem(parsed.type, parsed.data);
        if (shape !== undefined) {
          corrupt({ lineNumber: line.lineNumber, start: line.start, end: line.end, reason: shape }, false);
          lastSeq = parsed.seq; // (salvage: else corrupt threw) its seq was said with the skip, not missing
          continue;
        }
        lastSeq = parsed.seq;
        events.push(deepFreeze(parsed));
      }
      for (let i = 0; i < events.length; i++) yield events[i]!;
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === 'ENOENT') throw new HarnessError('JOURNAL_NOT_FOUND', `No journal at ${path}.`, { details: { path } });
    throw error;
  }
  if (header === undefined) parseHeaderLine(undefined, path);
  if (pendingBad !== undefined) {
    if (source.atomic === true) corrupt(pendingBad);
    else tornTail = { ...pendingBad, reason: `the last line is unreadable (${pendingBad.reason})` };
  }
  // A range read (fromSeq/toSeq) does not hold the whole history: only a whole read checks a fork.
  if (!salvage && source.fromSeq === undefined && source.toSeq === undefined) assertForkComplete(path, header!, lastSeq);
  if (tornTail !== undefined) options.onSkip?.(tornTail);
}

/**
 * A fork holds every event up to `parent.seq` (it is linked into place only after its copy is
 * fsynced); fewer is a copy that was cut — resuming it would continue a truncated history.
 * @throws HarnessError `JOURNAL_CORRUPT` (details `expectedSeq`, `lastSeq`).
 */
export function assertForkComplete(path: string, header: SessionHeader, lastSeq: number): void {
  const parent = header.parent;
  if (parent === undefined || typeof parent.seq !== 'number' || lastSeq >= parent.seq) return;
  throw new HarnessError(
    'JOURNAL_CORRUPT',
    `${path}: a truncated fork: its header says it was forked from ${String(parent.sessionId)} at seq ${parent.seq}, but it holds events only up to seq ${lastSeq} (the copy was cut). Fork again from the source; the file was left as it is.`,
    { details: { path, reason: 'truncated fork', expectedSeq: parent.seq, lastSeq } },
  );
}

function corruptError(path: string, bad: BadLine): HarnessError {
  return new HarnessError(
    'JOURNAL_CORRUPT',
    bad.hole === true
      ? // A hole, not a bad line: the line read is fine and a salvage read keeps it.
        `${path}:${bad.lineNumber}: the journal has a hole (${bad.reason}; a line was removed or lost). The file was left as it is; a salvage read goes on past the hole.`
      : `${path}:${bad.lineNumber}: corrupt journal line (${bad.reason}).${bad.reason.startsWith('"data"') ? ' A complete line of the wrong shape' : ' Lines after it exist, so this'} is not a torn tail. The file was left as it is; a salvage read skips the line.`,
    { details: { path, line: bad.lineNumber, reason: bad.reason, salvageable: true } },
  );
}

/** The header of a journal (reads only line 1). @throws `JOURNAL_NOT_FOUND`, `JOURNAL_HEADER`, `JOURNAL_VERSION`. */
export async function readJournalHeader(path: string): Promise<SessionHeader> {
  let first: Awaited<ReturnType<typeof readFirstLine>>;
  try {
    first = await readFirstLine(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === 'ENOENT') throw new HarnessError('JOURNAL_NOT_FOUND', `No journal at ${path}.`, { details: { path } });
    throw error;
  }
  const header = parseHeaderLine(first?.text, path, first?.terminated ?? true);
  if (first !== undefined && !first.terminated) {
    throw new HarnessError('JOURNAL_HEADER', `${path}:1: the header line has no line end (the file was cut while it was created).`, { details: { path, line: 1 } });
  }
  return header;
}

/** A session opened for reading: header, path, the fold and (on request) the events. */
export interface OpenedSession {
  readonly header: SessionHeader;
  readonly path: string;
  readonly state: SessionState;
  /** Seq of the last event (the state's `lastSeq` only counts state-changing events). */
  readonly lastSeq: number;
  readonly eventCount: number;
  /** Every event, only when asked for with `{ events: true }` (memory grows with the journal). */
  readonly events?: readonly AnySessionEvent[];
  /** A torn last line the read left out (a writable open moves it to a sidecar). */
  readonly tornTail?: SkippedLine;
  /** Lines a salvage read skipped. */
  readonly skipped: readonly SkippedLine[];
  /**
   * A turn (or compaction, or tool call) is still open at the end: the session is being written
   * right now, or it crashed — the next `openJournal` closes it with synthetic events.
   */
  readonly interrupted: boolean;
}

/** Options of the read-only `openSession` (`dataDir` resolves a bare session id). */
export interface OpenSessionOptions {
  readonly dataDir?: string;
  /** The store the session is in (default: the file store of `dataDir`; then `idOrPath` may be a path). */
  readonly store?: JournalStore;
  /** Skip corrupt lines instead of failing (see `skipped`). */
  readonly salvage?: boolean;
  /** Keep every event in memory and return them. Default false. */
  readonly events?: boolean;
}

/**
 * Opens a session read-only: no lock is taken, nothing is written or repaired (the loop opens a
 * session for writing with `openJournal`). Streams the file; keeps only the fold unless
 * `{ events: true }`.
 * @throws like {@link scanJournal}.
 */
export async function openSession(idOrPath: string, options: OpenSessionOptions = {}): Promise<OpenedSession> {
  const source = options.store !== undefined ? storeSource(options.store, idOrPath) : fileSource(resolveSessionPath(idOrPath, options.dataDir));
  const path = source.name;
  const events: AnySessionEvent[] | undefined = options.events ? [] : undefined;
  const scan = await scanJournal(source, {
    ...(options.salvage ? { salvage: true } : {}),
    ...(events ? { onEvent: (event: AnySessionEvent) => void events.push(deepFreeze(event)) } : {}),
  });
  const state = scan.state;
  return {
    header: scan.header,
    path,
    state,
    lastSeq: scan.lastSeq,
    eventCount: scan.eventCount,
    ...(events ? { events } : {}),
    ...(scan.tornTail ? { tornTail: scan.tornTail } : {}),
    skipped: scan.skipped,
    interrupted: state.openTurn !== undefined || state.compacting || state.pendingToolCalls.length > 0,
  };
}

/** The fold of a journal file (streaming). */
export async function foldJournal(path: string, options: { salvage?: boolean } = {}): Promise<SessionState> {
  return (await scanJournal(path, options)).state;
}
