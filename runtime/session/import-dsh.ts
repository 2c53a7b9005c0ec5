/**
 * Import of DeepSeek Harness sessions (format version 0; `fixtures/dsh-sessions/README.md`).
 *
 * Their journal: line 1 a header `{"type":"session","version":0,"id","createdAt","cwd",…}`, then
 * records `{"type","data",…}` with optional envelope fields `surfaceOp`, `sourceEventSeqs`,
 * `ignorable`. Records are numbered from 0 in file order (header not counted; a packed row counts
 * one per delta) — `sourceEventSeqs` and `messageSeqs` use these numbers.
 *
 * The import maps each record to exactly one event of ours, so **our seq = their record number + 1**
 * (their `sourceEventSeqs`/`messageSeqs` stay meaningful; they are kept where they sit in `data`,
 * the envelope's `sourceEventSeqs` is dropped). Placeholders (`{{cwd}}`, `{{tools}}`, …) are kept
 * as text. The mapping:
 *
 * | theirs | ours |
 * | --- | --- |
 * | `text-chunks` / `reasoning-chunks` / `tool-call-chunks` (packed) | one `assistant/chunk` per delta (`text-delta` / `reasoning-delta` / `tool-call-delta`; `id` on every tool delta, `name` on the first) |
 * | `assistant/chunk` | `assistant/chunk`, chunk fields mapped: `tool-call-delta.argumentsDelta` → `arguments`, `finish.reason` → `finish` |
 * | `user/message` (data is the message), `surfaceOp: "append"` | `user/message{turn, message}` |
 * | `user/message` with `surfaceOp: {op:"replace", start, end}` (their seqs, inclusive) | `surface/replace{start, end}` in surface indices, with the message |
 * | `assistant/message{turn, step, message, usage, interrupted?}` | the same + `finish` (of the call's finish chunk; `aborted` when interrupted; `stop` when none) |
 * | `tool/result{turn, step, message, error?}` | the same + `callId` (from the message) + `code` (from `error.code`) |
 * | `turn/end{reason:{kind,…}}` | `turn/end{reason: kind}` (+ `failure` from `reason.error`; the original reason kept as `dshReason`) |
 * | `approval/decided{id, outcome}` | `approval/decided{turn, step, callId, decision, decidedBy:'user'}` (call from their `approval/asked` of that id) |
 * | `llm/retry{retry, …}` | `llm/retry{attempt: retry, …}` |
 * | `compaction/start|summary|end` | ours (`trigger`, `messageCount` derived; `summary` text joined, blocks kept as `summaryContent`; `outcome`) |
 * | `turn/start`, `step/start|end`, `tool/call`, `request/header`, `session/title` | the same |
 * | anything else (`request/context`, `agent/inbox/spliced`, `approval/asked`, `todo/write`, `hook/*`, …) | an ignorable `dsh/<type>` event carrying the original data |
 *
 * Every `assistant/message` is checked against our BlockAssembler over the imported chunks of its
 * call (its (turn, step), after the last retry or recovery): mismatches are reported.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { HarnessError } from '../kernel/errors.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import { BlockAssembler } from '../llm/assembler.ts';
import { messageText } from '../llm/message.ts';
import type { FinishReason, Message, StreamChunk } from '../llm/types.ts';
import type { AnySessionEvent, SessionHeader, TurnEndReason } from './events.ts';
import { Folder, initialState } from './fold.ts';
import type { JournalIoOptions, StoreJournal } from './writer.ts';
import { createJournal } from './open.ts';
import type { JournalStore } from './store.ts';
import { lineBatches } from './lines.ts';
import { isSessionId } from './paths.ts';

/** An `assistant/message` that does not equal what our BlockAssembler makes of its call's chunks. */
export interface AssemblerMismatch {
  readonly seq: number;
  readonly turn: number;
  readonly step: number;
  readonly field: 'content' | 'replayState' | 'usage';
  readonly recorded: unknown;
  readonly assembled: unknown;
}

/** A DeepSeek Harness session read as ours (`importDshSession`), not yet written. */
export interface DshImport {
  /** Our header (`importedFrom: { format: 'dsh', path, sessionId, header }`). */
  readonly header: SessionHeader;
  /** Our events, seq from 1 (= their record number + 1). Deep-frozen. */
  readonly events: readonly AnySessionEvent[];
  readonly assemblerMismatches: readonly AssemblerMismatch[];
  /** Things the import could map only approximately (a torn last line among them). */
  readonly warnings: readonly string[];
  /**
   * The file's last line was torn (no newline, not JSON: the writer died mid-line): it was left out
   * and everything before it imported, as our own reader does with a journal's torn tail.
   * `line` is its 1-based line number, `byteCount` its length in bytes.
   */
  readonly tornTail?: { readonly line: number; readonly byteCount: number };
}

/** The DeepSeek Harness session format version this import reads. */
export const DSH_FORMAT_VERSION = 0;

interface DshRecord {
  type: string;
  data?: any;
  surfaceOp?: 'append' | { op: string; start: number; end: number };
  sourceEventSeqs?: number[];
  ignorable?: boolean;
  time?: number;
  [key: string]: unknown;
}

const PACKED: Record<string, 'text-delta' | 'reasoning-delta'> = { 'text-chunks': 'text-delta', 'reasoning-chunks': 'reasoning-delta' };

/**
 * Reads a DeepSeek Harness session file and returns our header and events.
 * @throws HarnessError `DSH_IMPORT` (not a dsh session, a bad line, a record we cannot place —
 *   naming file and line), and the fold's errors.
 */
export async function importDshSession(path: string, options: { now?: () => number } = {}): Promise<DshImport> {
  const file = resolve(path);
  const fail = (line: number, message: string): never => {
    throw new HarnessError('DSH_IMPORT', `${file}:${line}: ${message}`, { details: { path: file, line } });
  };
  const events: AnySessionEvent[] = [];
  const warnings: string[] = [];
  const mismatches: AssemblerMismatch[] = [];
  let dshHeader: Record<string, unknown> | undefined;
  let folder: Folder | undefined;
  let clock = 0;
  let turn: number | undefined;
  let step: number | undefined;
  /** Their record number of each surface message, parallel to the surface. */
  const surfaceSeqs: number[] = [];
  const asked = new Map<string, { callId: string; turn?: number; step?: number }>();
  const callTurnStep = new Map<string, { turn: number; step: number }>();
  let call: { turn: number; step: number; assembler: BlockAssembler; finish?: FinishReason; lastFinishFailure?: string } | undefined;
  let lastFinishCode: string | undefined;
  let compaction: { replaced: boolean } | undefined;

  const emit = (type: string, data: unknown, lineNumber: number, ignorable = false): void => {
    const seq = events.length + 1;
    const event = deepFreeze(ignorable ? { seq, type, atMs: clock, data, ignorable: true } : { seq, type, atMs: clock, data }) as AnySessionEvent;
    try {
      folder!.apply(event);
    } catch (error) {
      fail(lineNumber, `record ${seq - 1} (${type}) cannot be folded: ${error instanceof Error ? error.message : String(error)}`);
    }
    events.push(event);
  };

  const chunkEvent = (t: number, s: number, chunk: StreamChunk, lineNumber: number): void => {
    if (call === undefined || call.finish !== undefined || call.turn !== t || call.step !== s) call = { turn: t, step: s, assembler: new BlockAssembler() };
    call.assembler.push(chunk);
    if (chunk.type === 'finish') {
      call.finish = chunk.finish;
      lastFinishCode = chunk.finish.kind === 'error' || chunk.finish.kind === 'aborted' ? chunk.finish.failure?.code : undefined;
    }
    emit('assistant/chunk', { turn: t, step: s, chunk }, lineNumber);
  };

  let lineNumber = 0;
  let tornTail: { line: number; byteCount: number } | undefined;
  try {
    reading: for await (const lines of lineBatches(file)) {
      for (const line of lines) {
        lineNumber = line.lineNumber;
        if (line.text.trim() === '' && !line.terminated) continue;
        let record: DshRecord;
        try {
          record = JSON.parse(line.text) as DshRecord;
        } catch (error) {
          // Only the unterminated last line can be torn (its writer died mid-write): keep the prefix.
          if (!line.terminated && dshHeader !== undefined) {
            tornTail = { line: lineNumber, byteCount: Buffer.byteLength(line.text) };
            warnings.push(
              `line ${lineNumber}: the last line is torn (${tornTail.byteCount} bytes without a newline, not JSON — its writer stopped mid-line); it was left out and the ${lineNumber - 1} lines before it were imported.`,
            );
            break reading;
          }
          fail(lineNumber, `not JSON (${(error as Error).message}).`);
          return undefined as never;
        }
        if (dshHeader === undefined) {
          if (record?.type !== 'session') fail(1, 'line 1 is not a session header.');
          if (record.version !== DSH_FORMAT_VERSION) fail(1, versionProblem(record));
          dshHeader = record as Record<string, unknown>;
          clock = typeof record.createdAt === 'number' ? record.createdAt : 0;
          folder = new Folder(initialState(''));
          continue;
        }
        if (typeof record !== 'object' || record === null || typeof record.type !== 'string') fail(lineNumber, 'a record needs a string "type".');
        if (typeof record.time === 'number') clock = Math.max(clock, record.time);
        mapRecord(record, lineNumber);
      }
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === 'ENOENT') throw new HarnessError('DSH_IMPORT', `No file at ${file}.`, { details: { path: file } });
    throw error;
  }
  if (dshHeader === undefined) fail(1, 'the file is empty.');

  function mapRecord(record: DshRecord, lineNumber: number): void {
    const type = record.type;
    const data = record.data ?? {};
    const op = record.surfaceOp;
    const seqNow = events.length; // their record number of this record
    if (PACKED[type] !== undefined || type === 'tool-call-chunks') {
      const deltas: unknown[] = type === 'tool-call-chunks' ? data.args : data.texts;
      const dt: unknown[] = Array.isArray(data.dt) ? data.dt : [];
      if (!Array.isArray(deltas)) fail(lineNumber, `packed row ${type} has no ${type === 'tool-call-chunks' ? 'args' : 'texts'} array.`);
      if (dt.length !== Math.max(0, deltas.length - 1)) warnings.push(`line ${lineNumber}: packed row has ${deltas.length} deltas but ${dt.length} gaps`);
      for (let i = 0; i < deltas.length; i++) {
        if (i > 0 && typeof dt[i - 1] === 'number') clock += dt[i - 1] as number;
        const chunk: StreamChunk =
          type === 'tool-call-chunks'
            ? ({
                type: 'tool-call-delta',
                index: data.index,
                ...(data.id !== undefined ? { id: data.id } : {}),
                ...(i === 0 && data.name !== undefined ? { name: data.name } : {}),
                arguments: deltas[i],
              } as StreamChunk)
            : ({ type: PACKED[type]!, index: data.index, text: deltas[i] } as StreamChunk);
        chunkEvent(data.turn, data.step, chunk, lineNumber);
      }
      return;
    }
    if (op !== undefined && op !== 'append' && !(typeof op === 'object' && op.op === 'replace')) fail(lineNumber, `unknown surfaceOp ${JSON.stringify(op)}.`);
    switch (type) {
      case 'assistant/chunk':
        chunkEvent(data.turn, data.step, mapChunk(data.chunk, lineNumber), lineNumber);
        return;
      case 'turn/start':
        turn = data.turn;
        step = undefined;
        call = undefined;
        emit(type, data, lineNumber);
        return;
      case 'step/start':
      case 'step/end':
        step = data.step;
        call = undefined;
        emit(type, data, lineNumber);
        return;
      case 'turn/end': {
        const reason = data.reason;
        const kind: unknown = typeof reason === 'string' ? reason : reason?.kind;
        const mapped: TurnEndReason = kind === 'completed' || kind === 'aborted' || kind === 'error' || kind === 'max-tokens' || kind === 'interrupted' ? kind : 'error';
        if (mapped !== kind) warnings.push(`line ${lineNumber}: turn end reason ${JSON.stringify(kind)} mapped to "error"`);
        const failure = reason?.error ?? reason?.failure;
        const { reason: _r, ...rest } = data;
        emit(
          type,
          { ...rest, reason: mapped, ...(failure ? { failure: normalizeFailure(failure) } : {}), ...(typeof reason === 'object' && Object.keys(reason).length > 1 ? { dshReason: reason } : {}) },
          lineNumber,
        );
        call = undefined;
        turn = undefined;
        return;
      }
      case 'user/message': {
        const message = data as Message;
        if (typeof op === 'object') {
          const { start, end } = op;
          let from = surfaceSeqs.findIndex((s) => s >= start);
          if (from === -1) from = surfaceSeqs.length;
          let to = from;
          while (to < surfaceSeqs.length && surfaceSeqs[to]! <= end) to++;
          surfaceSeqs.splice(from, to - from, seqNow);
          if (compaction !== undefined) compaction.replaced = true;
          emit('surface/replace', { start: from, end: to, messages: [message] }, lineNumber);
        } else {
          surfaceSeqs.push(seqNow);
          emit(type, { ...(turn !== undefined ? { turn } : {}), message }, lineNumber);
        }
        return;
      }
      case 'assistant/message': {
        const value = data as { turn: number; step: number; message: Message; usage?: unknown; interrupted?: boolean };
        const interrupted = value.interrupted === true;
        const sameCall = call !== undefined && call.turn === value.turn && call.step === value.step;
        const finish: FinishReason = interrupted
          ? { kind: 'aborted', failure: { code: 'ABORTED', message: 'The reply was interrupted (imported: DeepSeek Harness marked it interrupted).' } }
          : sameCall && call!.finish !== undefined
            ? call!.finish
            : { kind: 'stop' };
        if (sameCall) checkAssembled(call!.assembler, value, interrupted, seqNow + 1);
        else if (!interrupted) warnings.push(`line ${lineNumber}: assistant/message of turn ${value.turn} step ${value.step} has no chunks to check`);
        if (op === 'append' || op === undefined) surfaceSeqs.push(seqNow);
        emit(type, { ...value, finish }, lineNumber);
        call = undefined;
        return;
      }
      case 'tool/call':
        callTurnStep.set(data.callId, { turn: data.turn, step: data.step });
        emit(type, data, lineNumber);
        return;
      case 'tool/result': {
        const message = data.message as Message;
        const callId = data.callId ?? (message?.source as { callId?: string } | undefined)?.callId;
        if (typeof callId !== 'string') fail(lineNumber, 'tool/result without a call id (data.message.source.callId).');
        const code = data.code ?? data.error?.code;
        surfaceSeqs.push(seqNow);
        emit(type, { ...data, callId, ...(typeof code === 'string' ? { code } : {}) }, lineNumber);
        return;
      }
      case 'approval/asked':
        if (typeof data.id === 'string' && typeof data.callId === 'string') asked.set(data.id, { callId: data.callId });
        emit(`dsh/${type}`, data, lineNumber, true);
        return;
      case 'approval/decided': {
        const ask = asked.get(data.id);
        if (ask === undefined) {
          warnings.push(`line ${lineNumber}: approval/decided for unknown approval ${JSON.stringify(data.id)} kept as dsh/approval/decided`);
          emit(`dsh/${type}`, data, lineNumber, true);
          return;
        }
        const outcome = String(data.outcome ?? '');
        const decision = /^(allow|approve|accept)/i.test(outcome) ? 'allow' : 'deny';
        const where = callTurnStep.get(ask.callId) ?? { turn: turn ?? 0, step: step ?? 0 };
        emit(type, { ...data, turn: where.turn, step: where.step, callId: ask.callId, decision, decidedBy: 'user' }, lineNumber);
        return;
      }
      case 'llm/retry':
        emit(type, { ...data, attempt: data.attempt ?? data.retry }, lineNumber);
        call = undefined;
        return;
      case 'compaction/start':
        compaction = { replaced: false };
        emit(
          type,
          { ...data, trigger: data.trigger ?? (lastFinishCode === 'CONTEXT_WINDOW_EXCEEDED' ? 'context-window-exceeded' : 'threshold'), messageCount: data.messageCount ?? folder!.messageCount },
          lineNumber,
        );
        return;
      case 'compaction/summary': {
        const summary =
          typeof data.summary === 'string' ? data.summary : Array.isArray(data.summary) ? data.summary.map((b: { text?: unknown }) => (typeof b?.text === 'string' ? b.text : '')).join('') : '';
        emit(type, { ...data, summary, ...(typeof data.summary === 'string' ? {} : { summaryContent: data.summary }) }, lineNumber);
        return;
      }
      case 'compaction/end':
        emit(
          type,
          {
            ...data,
            outcome: data.outcome ?? (compaction?.replaced ? 'compacted' : 'failed'),
            ...(data.outcome === undefined && compaction?.replaced ? { keptMessageCount: folder!.messageCount } : {}),
          },
          lineNumber,
        );
        compaction = undefined;
        return;
      case 'request/header':
      case 'session/title':
        emit(type, data, lineNumber);
        return;
      default:
        if (op !== undefined) fail(lineNumber, `record type "${type}" changes the surface (surfaceOp) but has no mapping; the import cannot place it.`);
        emit(`dsh/${type}`, data, lineNumber, true);
    }
  }

  function checkAssembled(assembler: BlockAssembler, value: { turn: number; step: number; message: Message; usage?: unknown }, interrupted: boolean, seq: number): void {
    let content: unknown;
    let replayState: unknown;
    let usage: unknown;
    try {
      if (interrupted) content = assembler.interruptedBlocks();
      else {
        const result = assembler.result();
        content = result.content;
        replayState = result.replayState;
        usage = result.usage;
      }
    } catch (error) {
      content = `assembler failed: ${error instanceof Error ? error.message : String(error)}`;
    }
    const recordedReplay = (value.message.source as { replayState?: unknown }).replayState;
    if (!isDeepStrictEqual(content, value.message.content)) mismatches.push({ seq, turn: value.turn, step: value.step, field: 'content', recorded: value.message.content, assembled: content });
    if (!interrupted && !isDeepStrictEqual(replayState, recordedReplay))
      mismatches.push({ seq, turn: value.turn, step: value.step, field: 'replayState', recorded: recordedReplay, assembled: replayState });
    if (!interrupted && value.usage !== undefined && !isDeepStrictEqual(usage, value.usage))
      mismatches.push({ seq, turn: value.turn, step: value.step, field: 'usage', recorded: value.usage, assembled: usage });
  }

  function mapChunk(chunk: any, lineNumber: number): StreamChunk {
    if (typeof chunk !== 'object' || chunk === null || typeof chunk.type !== 'string') fail(lineNumber, 'assistant/chunk without a chunk.');
    if (chunk.type === 'tool-call-delta') {
      const { argumentsDelta, ...rest } = chunk;
      return (argumentsDelta === undefined ? rest : { ...rest, arguments: argumentsDelta }) as StreamChunk;
    }
    if (chunk.type === 'finish') {
      const { reason, ...rest } = chunk;
      if (rest.finish !== undefined) return chunk as StreamChunk;
      return { ...rest, finish: normalizeFinish(reason) } as StreamChunk;
    }
    return chunk as StreamChunk;
  }

  const h = dshHeader!;
  const originalId = typeof h.id === 'string' ? h.id : undefined;
  const { type: _t, version: _v, id: _i, createdAt: _c, cwd: _w, ...rest } = h;
  const header: SessionHeader = deepFreeze({
    type: 'session',
    version: 1,
    id: originalId !== undefined && isSessionId(originalId) ? originalId : randomUUID(),
    createdAtMs: typeof h.createdAt === 'number' ? h.createdAt : (options.now ?? Date.now)(),
    ...(typeof h.cwd === 'string' ? { cwd: h.cwd } : {}),
    // A child session (a subagent): linked to its parent by id; the spawning call is matched when the pair is imported.
    ...(typeof h.parentSession === 'string' ? { parentSession: { sessionId: h.parentSession, depth: typeof h.delegationDepth === 'number' ? h.delegationDepth : 1 } } : {}),
    importedFrom: { format: 'dsh', path: file, ...(originalId !== undefined ? { sessionId: originalId } : {}), header: { version: h.version, ...rest } },
  });
  return tornTail !== undefined ? { header, events, assemblerMismatches: mismatches, warnings, tornTail } : { header, events, assemblerMismatches: mismatches, warnings };
}

/** Why a header's `version` is not read, and which way to go (a newer file needs a newer harness-runtime). */
function versionProblem(header: DshRecord): string {
  const version = header.version;
  const known = `the DeepSeek Harness import reads format version ${DSH_FORMAT_VERSION}`;
  if (version === 1 && typeof header.createdAtMs === 'number') {
    return `this is a Harness journal (version 1, createdAtMs), not a DeepSeek Harness session: open it with openSession / harness replay instead of importing it.`;
  }
  if (typeof version === 'number' && Number.isInteger(version) && version > DSH_FORMAT_VERSION) {
    return `session format version ${version} is newer than this import knows (${known}): upgrade harness-runtime to a release that reads version ${version}, or export the session from DeepSeek Harness in format version ${DSH_FORMAT_VERSION}.`;
  }
  return `session format version ${JSON.stringify(version)} is not a DeepSeek Harness format version (${known}; the header needs "version": ${DSH_FORMAT_VERSION}).`;
}

function normalizeFailure(failure: any): { code: string; message: string } {
  if (typeof failure !== 'object' || failure === null) return { code: 'UNKNOWN', message: String(failure) };
  return { ...failure, code: typeof failure.code === 'string' ? failure.code : 'UNKNOWN', message: typeof failure.message === 'string' ? failure.message : '' };
}

function normalizeFinish(reason: any): FinishReason {
  const kind = typeof reason === 'string' ? reason : reason?.kind;
  if (kind === 'error' || kind === 'aborted') return { ...reason, kind, failure: normalizeFailure(reason?.failure) } as FinishReason;
  if (kind === 'stop' || kind === 'tool-calls' || kind === 'max-tokens') return (typeof reason === 'object' ? reason : { kind }) as FinishReason;
  return { kind: 'error', failure: { code: 'UNKNOWN', message: `Unknown finish reason ${JSON.stringify(reason)} (imported).` } } as FinishReason;
}

/**
 * The tool call of a parent session that spawned a child (a subagent). DeepSeek Harness names only
 * the parent session in a child's header, so the call is the one whose arguments' `prompt` is the
 * child's first prompt (their `subagent` tool). Undefined when none or several match.
 */
export function dshChildCallId(parentEvents: readonly AnySessionEvent[], childEvents: readonly AnySessionEvent[]): string | undefined {
  const first = childEvents.find((event) => event.type === 'user/message');
  if (first?.type !== 'user/message') return undefined;
  const prompt = messageText(first.data.message).trim();
  const matches: string[] = [];
  for (const event of parentEvents) {
    if (event.type !== 'tool/call') continue;
    let args: unknown;
    try {
      args = JSON.parse(event.data.arguments);
    } catch {
      continue;
    }
    const given = (args as { prompt?: unknown } | null)?.prompt;
    if (typeof given === 'string' && given.trim() === prompt) matches.push(event.data.callId);
  }
  return matches.length === 1 ? matches[0] : undefined;
}

/** The DeepSeek Harness sessions next to `path` whose header names `parentId` as their parent (`session.1.jsonl`, …). */
export function dshChildFiles(path: string, parentId: string): string[] {
  const dir = dirname(resolve(path));
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const file = join(dir, name);
    if (!name.endsWith('.jsonl') || file === resolve(path)) continue;
    let first: { parentSession?: unknown; version?: unknown } | undefined;
    try {
      first = JSON.parse(readFileSync(file, 'utf8').split('\n', 1)[0] ?? '');
    } catch {
      continue;
    }
    if (first?.version === DSH_FORMAT_VERSION && first.parentSession === parentId) out.push(file);
  }
  return out;
}

/** Options of `writeImportedSession`. */
export interface WriteImportedOptions extends JournalIoOptions {
  readonly dataDir?: string;
  /** The store to write to (default: the file store of `dataDir`). */
  readonly store?: JournalStore;
  /** Our session id (default: theirs when it is a valid file name, else a random UUID). */
  readonly id?: string;
  /**
   * Import the session's children too (default true): the DeepSeek Harness sessions next to it whose
   * header names it as their parent, each written with `parentSession` naming our parent and the
   * call that spawned it (see {@link dshChildCallId}), and theirs the same way.
   */
  readonly children?: boolean;
}

/**
 * Imports a DeepSeek Harness session and writes it as a journal of ours
 * (`<dataDir>/sessions/<id>.jsonl`, closed afterwards). This is `harness import dsh <file>`.
 * @throws HarnessError `DSH_IMPORT`, `JOURNAL_EXISTS`, `JOURNAL_LOCKED`.
 */
export async function writeImportedSession(path: string, options: WriteImportedOptions = {}): Promise<ImportedSession> {
  return writeImported(path, options, undefined);
}

/** What `writeImportedSession` wrote: the session, and its children (subagents) when imported with it. */
export interface ImportedSession {
  readonly path: string;
  readonly header: SessionHeader;
  readonly eventCount: number;
  readonly imported: DshImport;
  readonly children: readonly ImportedSession[];
}

async function writeImported(path: string, options: WriteImportedOptions, parent: { header: SessionHeader; events: readonly AnySessionEvent[] } | undefined): Promise<ImportedSession> {
  const imported = await importDshSession(path);
  const header = imported.header;
  const link = header.parentSession;
  const callId = parent !== undefined ? dshChildCallId(parent.events, imported.events) : undefined;
  const parentSession = parent !== undefined ? { sessionId: parent.header.id, ...(callId !== undefined ? { callId } : {}), depth: (parent.header.parentSession?.depth ?? 0) + 1 } : link;
  const journal = (await createJournal({
    ...options,
    id: parent === undefined ? (options.id ?? header.id) : header.id,
    createdAtMs: header.createdAtMs,
    ...(header.cwd !== undefined ? { cwd: header.cwd } : {}),
    ...(parentSession !== undefined ? { parentSession } : {}),
    importedFrom: header.importedFrom!,
  })) as StoreJournal;
  try {
    for (const event of imported.events) {
      const appended = journal.appendRecord(event);
      if (appended instanceof Promise) await appended;
    }
    await journal.close();
  } catch (error) {
    await journal.close().catch(() => undefined);
    throw error;
  }
  const children: ImportedSession[] = [];
  const originalId = header.importedFrom?.sessionId;
  if (options.children !== false && originalId !== undefined) {
    for (const file of dshChildFiles(path, originalId)) children.push(await writeImported(file, options, { header: journal.header, events: imported.events }));
  }
  return { path: journal.path, header: journal.header, eventCount: imported.events.length, imported, children };
}
