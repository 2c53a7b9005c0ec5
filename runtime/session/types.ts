/**
 * The session state (the fold) and the journal interface (DESIGN "Sessions and the journal").
 */
import type { CallId, Message, TokenUsage } from '../llm/types.ts';
import type { AnySessionEvent, RequestHeader, SessionEvent, SessionEventMap, SessionEventType, SessionHeader, TurnEndReason } from './events.ts';

/** A journaled tool call still without its `tool/result` (in `SessionState.pendingToolCalls`). */
export interface PendingToolCall {
  readonly callId: CallId;
  readonly name: string;
  readonly arguments: string;
  readonly turn: number;
  readonly step: number;
  readonly decision?: 'allow' | 'deny';
  /** `tool/start` was journaled: the body may have run. */
  readonly started: boolean;
}

/**
 * A session's state: always a fold over its events, never stored apart. `messages` is the surface —
 * the history the next request is built from.
 */
export interface SessionState {
  readonly sessionId: string;
  /**
   * Seq of the last event that changed the state (0 for none). Events that never change it
   * (`assistant/chunk`, `tool/output`, `llm/retry`, ignorable unknown records) leave the state
   * object as it is, so they do not advance this; `SessionJournal.lastSeq` is the last seq written.
   */
  readonly lastSeq: number;
  readonly messages: readonly Message[];
  /** The last `request/header`. */
  readonly header?: RequestHeader;
  /** Number of turns started. */
  readonly turnCount: number;
  /** The open turn, if one has started and not ended. */
  readonly openTurn?: { readonly turn: number; readonly step?: number; readonly stepOpen: boolean };
  readonly lastTurnEnd?: { readonly turn: number; readonly reason: TurnEndReason };
  /** Tool calls journaled and not yet answered, in call order. */
  readonly pendingToolCalls: readonly PendingToolCall[];
  /** Sum of every `assistant/message` usage and compaction summary usage, per class. */
  readonly usage: TokenUsage;
  readonly title?: string;
  /** A compaction started and has not ended. */
  readonly compacting: boolean;
}

/** Options of `SessionJournal.append` / `SessionHandle.append`. */
export interface AppendOptions {
  /** Mark the record `ignorable` (a reader that does not know its type may skip it). */
  ignorable?: boolean;
}

/**
 * An open, writable session journal (one writer per session). `append` validates that `data` is
 * lossless JSON, assigns `seq` and `atMs`, deep-freezes, folds it into `state`, queues the line for
 * the file and delivers it on the `session/event` sink; it returns the event, or a promise of it when
 * a sink is asynchronous (await it either way).
 */
export interface SessionJournal {
  readonly id: string;
  readonly path: string;
  readonly header: SessionHeader;
  /** The live fold. */
  readonly state: SessionState;
  /** Seq of the last event appended (or read), 0 for none. (Added by the session module.) */
  readonly lastSeq: number;
  append<T extends SessionEventType>(type: T, data: SessionEventMap[T], options?: AppendOptions): SessionEvent<T> | Promise<SessionEvent<T>>;
  /** Writes what is queued and fsyncs: before a model call, before a tool body, at turn end. */
  checkpoint(): Promise<void>;
  /** Same as checkpoint, for callers outside the loop. */
  flush(): Promise<void>;
  /** Flushes and releases the writer lock. Appending afterwards throws `JOURNAL_CLOSED`. */
  close(): Promise<void>;
}

/** What opening a journal repaired. */
export interface RepairReport {
  /** Where a torn last line was moved, and its bytes. */
  readonly tornTail?: { readonly sidecarPath: string; readonly byteCount: number };
  /** Synthetic events appended to close an interrupted turn or compaction. */
  readonly syntheticEvents: readonly AnySessionEvent[];
  /** A stale writer lock (its pid dead) that was taken over. (Added by the session module.) */
  readonly staleLock?: { readonly pid: number | null };
  /**
   * Read-only salvage only: the lines left out (corrupt lines, a torn tail), with their line
   * numbers. (Added by the session module.)
   */
  readonly skippedLines?: readonly { readonly lineNumber: number; readonly start: number; readonly end: number; readonly reason: string }[];
}

/** The token totals of a session's model calls of one provider and model: what a price table prices. */
export interface ModelUsage {
  readonly provider: string;
  readonly model: string;
  readonly usage: TokenUsage;
  /** Calls (`assistant/message` and `compaction/summary` events) with usage. */
  readonly callCount: number;
}

/** What `listSessions` tells about one session (read cheaply: chunk lines are not parsed). */
export interface SessionSummary {
  readonly id: string;
  /** Where it is: the journal file (file store), or the store's location of the session. */
  readonly path: string;
  readonly createdAtMs?: number;
  readonly title?: string;
  /** The session's workspace (its header's `cwd`), when it has one. */
  readonly cwd?: string;
  readonly turnCount: number;
  /**
   * The last turn started and not ended in the journal: a turn running now, or one whose writer
   * died (the next open closes it, `interrupted`). `JournalStore.liveWriters` tells which.
   */
  readonly openTurn?: { readonly turn: number; readonly startSeq: number };
  /** Token totals of every `assistant/message` and `compaction/summary`. */
  readonly usage: TokenUsage;
  /**
   * `usage` by provider and model, over the calls that name theirs, in order of first use (absent
   * when there are none): a list prices each session from it without reading its journal again.
   */
  readonly usageByModel?: readonly ModelUsage[];
  readonly eventCount: number;
  /** `atMs` of the last event, else the file's modification time. */
  readonly lastUpdateAtMs: number;
  readonly parent?: SessionHeader['parent'];
  /** The session that spawned this one (a subagent's header link). */
  readonly parentSession?: SessionHeader['parentSession'];
  readonly importedFrom?: SessionHeader['importedFrom'];
  /** The session could not be read (its error code and message). */
  readonly error?: { readonly code: string; readonly message: string };
}
