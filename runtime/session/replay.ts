/**
 * Replay (DESIGN "Replay"): fork a session from a prefix, list sessions, and find the recorded
 * model calls of a journal (what a cassette serves).
 */
import { randomUUID } from 'node:crypto';
import { HarnessError } from '../kernel/errors.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import type { FinishReason, StreamChunk } from '../llm/types.ts';
import type { AnySessionEvent, RequestHeader, SessionEvent, SessionHeader } from './events.ts';
import { FileJournalStore } from './file-store.ts';
import { Folder, initialState } from './fold.ts';
import type { JournalIoOptions } from './writer.ts';
import { createStoredJournal, storeOf, type OpenedJournal } from './open.ts';
import { assertSessionId } from './paths.ts';
import { parseEventLine, scanJournal, storeSource } from './reader.ts';
import { planRepair } from './repair.ts';
import { SnapshotReader, type RecordedRequest, type RecordedSnapshot } from './snapshot.ts';
import type { JournalStore } from './store.ts';
import type { SessionSummary } from './summary.ts';
import type { SessionState } from './types.ts';

export type { SessionSummary } from './summary.ts';

/** Options of `forkSession(source, options)`. */
export interface ForkOptions extends JournalIoOptions {
  /** The last source event the fork keeps (0 keeps none). */
  readonly atSeq: number;
  /** Where the new journal goes (and where a source id is looked up) in the file store. */
  readonly dataDir?: string;
  /** The store of the source and of the fork (default: the file store of `dataDir`). */
  readonly store?: JournalStore;
  /** The new session's id (default: a random UUID). */
  readonly id?: string;
  /**
   * `atSeq` inside an open turn (or compaction, or with unanswered tool calls) is refused
   * (`FORK_INSIDE_TURN`) unless this is true: then the fork closes it with the same synthetic
   * events a crash repair appends (`turn/end{interrupted}`, `TOOL_NOT_STARTED` results, …).
   */
  readonly closeOpenTurn?: boolean;
  /**
   * Fork the session's child sessions (subagents) with it (default true): each child whose spawning
   * call was answered by `atSeq`, up to its last turn that had ended by then, as a child of the fork
   * (`<fork id>.sub1`, … — its header's `parentSession` names the fork), and theirs the same way.
   */
  readonly children?: boolean;
  /** @internal The fork is itself a forked child: its header's link. */
  readonly parentSession?: SessionHeader['parentSession'];
  /** @internal The store's child sessions, listed once for the whole tree of forks. */
  readonly childIndex?: ChildSessionIndex;
}

/** What `forkSession` made: the fork (open for writing) and its forked children (closed). */
export interface ForkedJournal extends OpenedJournal {
  readonly children: readonly { readonly id: string; readonly path: string; readonly sourceId: string; readonly atSeq: number }[];
}

/**
 * Starts a new session seeded with the events `1..atSeq` of `source` (an id, or in the file store
 * a path), and opens it for writing. The events are copied verbatim — same `seq`, `type`, `atMs`,
 * `data`, byte for byte — so the fork folds on its own; its header names
 * `parent: { sessionId, seq: atSeq }`. Works on any store (source and fork in the same one).
 * @throws HarnessError `FORK_OUT_OF_RANGE`, `FORK_INSIDE_TURN`, the read errors of the source,
 *   `JOURNAL_EXISTS` / `JOURNAL_LOCKED` for the new id.
 */
export async function forkSession(source: string, options: ForkOptions): Promise<ForkedJournal> {
  const store = storeOf(options);
  const atSeq = options.atSeq;
  if (!Number.isInteger(atSeq) || atSeq < 0) {
    throw new HarnessError('FORK_OUT_OF_RANGE', `A fork needs a seq of 0 or more (an integer); got ${String(atSeq)}.`, { details: { atSeq } });
  }
  const id = options.id ?? randomUUID();
  assertSessionId(id);
  const prefix = await scanJournal(storeSource(store, source), { stopAtSeq: atSeq, trackLiveCall: true });
  const sourceHeader = prefix.header;
  if (prefix.lastSeq < atSeq) {
    throw new HarnessError('FORK_OUT_OF_RANGE', `Session ${sourceHeader.id} has ${prefix.lastSeq} events; it cannot be forked at seq ${atSeq}.`, {
      details: { sessionId: sourceHeader.id, atSeq, lastSeq: prefix.lastSeq },
    });
  }
  const state = prefix.state;
  const closing = planRepair(state, prefix.liveCall, { kind: 'fork', atSeq });
  if (closing.length > 0 && options.closeOpenTurn !== true) {
    const open = state.openTurn;
    const where =
      open !== undefined
        ? `inside turn ${open.turn}${prefix.openTurnSeq !== undefined ? ` (started at seq ${prefix.openTurnSeq})` : ''}`
        : state.compacting
          ? 'inside a compaction'
          : 'with unanswered tool calls';
    // Only a seq the prefix proves works: the one before the open turn (the scan stopped at `atSeq`,
    // so the turn's end — past it, maybe past damage — is not known here).
    const fix =
      prefix.openTurnSeq !== undefined
        ? `Fork at seq ${prefix.openTurnSeq - 1} (the last seq before that turn), or pass closeOpenTurn: true to fork at seq ${atSeq} with synthetic events closing the turn in the fork.`
        : `Pass closeOpenTurn: true to fork at seq ${atSeq} with synthetic events closing what is open there in the fork.`;
    throw new HarnessError('FORK_INSIDE_TURN', `Seq ${atSeq} of session ${sourceHeader.id} is ${where}. ${fix}`, {
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
    ...(options.parentSession !== undefined ? { parentSession: options.parentSession } : {}),
  });
  const journal = await createStoredJournal(store, header, options, {
    state: Object.freeze({ ...state, sessionId: id }),
    lastSeq: atSeq,
    lines: atSeq === 0 ? emptyLines() : eventLinesOf(store, source, atSeq),
  });
  const syntheticEvents: AnySessionEvent[] = [];
  try {
    for (const planned of closing) syntheticEvents.push((await journal.append(planned.type, planned.data as never)) as AnySessionEvent);
    await journal.checkpoint();
  } catch (error) {
    await journal.close().catch(() => undefined);
    throw error;
  }
  let children: ForkedJournal['children'] = [];
  if (options.children !== false) {
    try {
      children = await forkChildren(store, sourceHeader, source, atSeq, journal.header, options);
    } catch (error) {
      await journal.close().catch(() => undefined);
      throw error;
    }
  }
  return { journal, repairs: { syntheticEvents }, children };
}

/**
 * Forks the children of `sourceHeader` into children of `fork`: those whose spawning call has its
 * `tool/result` within `1..atSeq`, each at the seq of its last `turn/end` written no later than the
 * source's event `atSeq` (a long-lived child may have gone on after the fork point).
 */
async function forkChildren(store: JournalStore, sourceHeader: SessionHeader, source: string, atSeq: number, fork: SessionHeader, options: ForkOptions): Promise<ForkedJournal['children']> {
  // One listing of the store for the whole tree: a listing reads every session in it.
  const index = options.childIndex ?? (await childSessionIndex(store));
  const children = index.get(sourceHeader.id) ?? [];
  if (children.length === 0) return [];
  const answered = new Set<string>();
  let cutAtMs = 0;
  for await (const event of eventsOf(store, source, atSeq)) {
    cutAtMs = event.atMs;
    if (event.type === 'tool/result') answered.add(event.data.callId);
  }
  const out: { id: string; path: string; sourceId: string; atSeq: number }[] = [];
  for (const child of children) {
    const link = child.parentSession!;
    if (link.callId === undefined || !answered.has(link.callId)) continue;
    let childSeq = 0;
    for await (const event of eventsOf(store, child.id)) {
      if (event.atMs > cutAtMs) break;
      if (event.type === 'turn/end') childSeq = event.seq;
    }
    if (childSeq === 0) continue;
    const suffix = child.id.startsWith(`${sourceHeader.id}.`) ? child.id.slice(sourceHeader.id.length) : `.${child.id}`;
    const id = `${fork.id}${suffix}`.slice(0, 200);
    const forked = await forkSession(child.id, {
      ...options,
      atSeq: childSeq,
      id,
      store,
      closeOpenTurn: false,
      parentSession: { sessionId: fork.id, callId: link.callId, depth: link.depth },
      childIndex: index,
    });
    await forked.journal.close();
    out.push({ id, path: forked.journal.path, sourceId: child.id, atSeq: childSeq }, ...forked.children);
  }
  return out;
}

/** The events `1..toSeq` of a session in a store. */
async function* eventsOf(store: JournalStore, id: string, toSeq?: number): AsyncGenerator<AnySessionEvent> {
  let header = true;
  for await (const lines of store.read(id, toSeq === undefined ? {} : { toSeq })) {
    for (const line of lines) {
      if (header) {
        header = false;
        continue;
      }
      const event = parseEventLine(line.text);
      if (typeof event === 'string') return;
      if (toSeq !== undefined && event.seq > toSeq) return;
      yield event;
    }
  }
}

async function* emptyLines(): AsyncGenerator<readonly string[], void, undefined> {}

/** The event lines 1..toSeq of a session, verbatim (the header left out), in batches. */
async function* eventLinesOf(store: JournalStore, id: string, toSeq: number): AsyncGenerator<readonly string[], void, undefined> {
  let header = true;
  for await (const lines of store.read(id, { toSeq })) {
    const out: string[] = [];
    for (const line of lines) {
      if (header) {
        header = false;
        continue;
      }
      const event = parseEventLine(line.text);
      if (typeof event === 'string' || event.seq > toSeq) break;
      out.push(line.text);
    }
    if (out.length > 0) yield out;
  }
}

/**
 * The sessions in `<dataDir>/sessions` (or in `store`), most recently updated first (unreadable
 * ones last, with their `error`). Each file is streamed once; only the lines that matter (turns,
 * titles, usage) are parsed.
 */
export async function listSessions(dataDirOrStore?: string | JournalStore): Promise<SessionSummary[]> {
  const store = typeof dataDirOrStore === 'object' ? dataDirOrStore : new FileJournalStore(dataDirOrStore !== undefined ? { dataDir: dataDirOrStore } : {});
  return store.list();
}

/**
 * The child sessions (subagents) of a session: those whose header's `parentSession` names it, oldest
 * first. Replay, fork and cassette of a parent use this link (it is the one every child has,
 * imported ones included). Each call lists the whole store (every session read): for a tree of
 * sessions use one {@link childSessionIndex}.
 */
export async function listChildSessions(parentId: string, dataDirOrStore?: string | JournalStore): Promise<SessionSummary[]> {
  return [...((await childSessionIndex(dataDirOrStore)).get(parentId) ?? [])];
}

/** Child sessions by parent session id, each list oldest first (see {@link childSessionIndex}). */
export type ChildSessionIndex = ReadonlyMap<string, readonly SessionSummary[]>;

/**
 * The child sessions of every session in `<dataDir>/sessions` (or in `store`), from one listing:
 * parent id → its children, oldest first (as {@link listChildSessions}). A replay, fork or export of
 * a session with subagents walks its tree with one index instead of listing the store per session
 * (a store's listing reads every session in it: per child, that was O(children × store)).
 */
export async function childSessionIndex(dataDirOrStore?: string | JournalStore): Promise<ChildSessionIndex> {
  const index = new Map<string, SessionSummary[]>();
  for (const summary of await listSessions(dataDirOrStore)) {
    const parentId = summary.parentSession?.sessionId;
    if (parentId === undefined) continue;
    const list = index.get(parentId);
    if (list === undefined) index.set(parentId, [summary]);
    else list.push(summary);
  }
  for (const list of index.values()) list.sort((a, b) => (a.createdAtMs ?? 0) - (b.createdAtMs ?? 0) || a.id.localeCompare(b.id));
  return index;
}

/**
 * One model call as a journal recorded it (what a cassette replays; DESIGN "Replay": cassette).
 *
 * Cheap to keep for every call of a long session: a call holds its own chunks and a few references;
 * the two things that hold the whole history — the state before the call and the model-visible
 * request — are built on demand by {@link RecordedCall.stateBefore} and {@link RecordedCall.request}
 * (a list per call made the calls of a 10,000-turn journal hold ~10^8 references, gigabytes).
 */
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
  /** The request header in force when the call was made (the last `request/header` before it). */
  readonly header?: RequestHeader;
  /**
   * The call's `request/snapshot`, as read: its hash, call config and message count, or why it cannot
   * be rebuilt (absent in journals written before snapshots). {@link request} rebuilds the request.
   */
  readonly snapshot?: RecordedSnapshot;
  /** Surface length (the message count of the request) when the call was made. */
  readonly messageCount: number;
  /** The finish, when the recording has a finish chunk (absent: the call was cut). */
  readonly finish?: FinishReason;
  /** The `assistant/message` assembled from this call, when one was journaled. */
  readonly message?: SessionEvent<'assistant/message'>;
  /**
   * The model-visible request rebuilt from its `request/snapshot` (undefined in journals written
   * before snapshots). Built anew on each call, O(its messages), and not kept.
   */
  request(): RecordedRequest | undefined;
  /**
   * The state just before the call's first chunk (its surface is the request's history), folded anew
   * on each call and not kept: asked call after call in order, the fold goes on from the previous
   * one (O(the events between them) plus a copy of the surface); asked for an earlier call, it folds
   * from the journal's start.
   * @throws HarnessError as the fold (`UNKNOWN_EVENT_TYPE` when a plugin type's reducer was unloaded since).
   */
  stateBefore(): SessionState;
}

/** The events of a recording, folded on demand up to a call (one fold shared by its calls, going forward). */
class RecordingFold {
  private folder: Folder | undefined;
  /** `events[0..applied)` are in `folder`. */
  private applied = 0;

  constructor(
    private readonly events: readonly AnySessionEvent[],
    private readonly init: SessionState,
  ) {}

  /** The state after `events[0..end)`. */
  stateBefore(end: number): SessionState {
    if (this.folder === undefined || end < this.applied) {
      this.folder = new Folder(this.init);
      this.applied = 0;
    }
    const folder = this.folder;
    while (this.applied < end) folder.apply(this.events[this.applied++]!);
    return folder.finish();
  }
}

class Call implements RecordedCall {
  readonly chunks: StreamChunk[] = [];
  lastSeq: number;
  // Declared only: an absent one is no key at all (as on the plain objects calls were before).
  declare finish?: FinishReason;
  declare message?: SessionEvent<'assistant/message'>;
  declare readonly header?: RequestHeader;
  declare readonly snapshot?: RecordedSnapshot;
  readonly #fold: RecordingFold;
  /** The index of the call's first chunk in the recording's events. */
  readonly #eventIndex: number;

  constructor(
    readonly index: number,
    readonly turn: number,
    readonly step: number,
    readonly attempt: number,
    readonly firstSeq: number,
    readonly messageCount: number,
    header: RequestHeader | undefined,
    snapshot: RecordedSnapshot | undefined,
    fold: RecordingFold,
    eventIndex: number,
  ) {
    this.lastSeq = firstSeq;
    if (header !== undefined) this.header = header;
    if (snapshot !== undefined) this.snapshot = snapshot;
    this.#fold = fold;
    this.#eventIndex = eventIndex;
  }

  request(): RecordedRequest | undefined {
    return this.snapshot?.request();
  }

  stateBefore(): SessionState {
    return this.#fold.stateBefore(this.#eventIndex);
  }
}

/**
 * Splits a journal's `assistant/chunk` records into model calls. A call is a run of chunks of one
 * (turn, step) that starts after `step/start`, `llm/retry`, an `assistant/message`, a finish chunk
 * or any change of (turn, step), and ends with its finish chunk (or where the recording stops
 * streaming it). So a retried step has one call per attempt, and a call re-made after a recovery
 * (a failed call, a compaction, the same step) is a call of its own.
 *
 * Linear in the journal: one pass, O(1) per event apart from what it carries (the fold's surface is
 * never copied here; see {@link RecordedCall} for what is built on demand). The calls keep the
 * events (a copy of the list) for {@link RecordedCall.stateBefore}.
 * @param init the state the events start from (default `initialState('')`).
 * @throws HarnessError as the fold (`UNKNOWN_EVENT_TYPE`, `INVALID_EVENT_DATA`).
 */
export function recordedCalls(events: Iterable<AnySessionEvent>, init?: SessionState): RecordedCall[] {
  const list = Array.from(events);
  const start = init ?? initialState('');
  const fold = new RecordingFold(list, start);
  const calls: Call[] = [];
  // One fold for the whole journal, never finished here: the message count is its length.
  const folder = new Folder(start);
  let header = start.header;
  let current: Call | undefined;
  const perStep = new Map<string, number>();
  const snapshots = new SnapshotReader();
  let snapshot: RecordedSnapshot | undefined;
  for (let i = 0; i < list.length; i++) {
    const event = list[i]!;
    const type = event.type;
    const read = snapshots.read(event);
    if (read !== undefined) {
      snapshot = read;
      continue;
    }
    if (type === 'assistant/chunk') {
      const { turn, step, chunk } = (event as SessionEvent<'assistant/chunk'>).data;
      if (current === undefined || current.finish !== undefined || current.turn !== turn || current.step !== step) {
        const key = `${turn}:${step}`;
        const attempt = perStep.get(key) ?? 0;
        perStep.set(key, attempt + 1);
        current = new Call(calls.length, turn, step, attempt, event.seq, folder.messageCount, header, snapshot, fold, i);
        calls.push(current);
        snapshot = undefined;
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
    } else if (type === 'request/header') {
      header = (event as SessionEvent<'request/header'>).data.header;
    }
    folder.apply(event);
  }
  return calls;
}
