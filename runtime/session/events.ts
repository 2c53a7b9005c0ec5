/**
 * Session events (DESIGN "Sessions and the journal"): the append-only record of everything a
 * session did. Envelope `{seq, type, atMs, data}`, `seq` contiguous from 1. Event types are declared
 * by declaration merging on {@link SessionEventMap}; a reader refuses an unknown type unless the
 * record says `"ignorable": true`.
 */
import type { EmitHook, SinkHook } from '../kernel/bus.ts';
import type { Failure } from '../kernel/errors.ts';
import type { AssistantMessage, CallId, FinishReason, LlmCallConfig, LlmFailure, Message, StreamChunk, TokenUsage, ToolResultMessage, ToolSpec, UserMessage } from '../llm/types.ts';
import type { TraceContext } from './trace-context.ts';

/** Why a turn ended. */
export type TurnEndReason = 'completed' | 'aborted' | 'error' | 'max-tokens' | 'interrupted';

/** What a request was sent with, journaled when it changes (binds the journal to the dispatch). */
export interface RequestHeader {
  readonly config: LlmCallConfig;
  readonly system?: string;
  readonly tools: readonly ToolSpec[];
  /** The adapter kind that served the route when the header was written. */
  readonly adapterKind?: string;
}

/** `request/snapshot` data (see runtime/session/snapshot.ts: the canonical form, the delta). */
export interface RequestSnapshot {
  readonly turn: number;
  readonly step: number;
  /** `requestHash` (snapshot.ts) of the canonical request. */
  readonly hash: string;
  /** Present when changed since the writer's previous snapshot (always in its first). */
  readonly config?: LlmCallConfig;
  /** Present when changed; `null`: no system prompt. */
  readonly system?: string | null;
  /** Present when changed. */
  readonly tools?: readonly ToolSpec[];
  /**
   * The previous snapshot's first `keep` messages, then `add`: a message id (the journaled message),
   * `{ id, replayState: false }` (the journaled message without its replay state: the seam dropped
   * it), or a message inline (made or rewritten by a middleware).
   */
  readonly messages: { readonly keep: number; readonly add: readonly SnapshotMessage[] };
}

/** One added message of a snapshot (see {@link RequestSnapshot}). */
export type SnapshotMessage = string | { readonly id: string; readonly replayState: false } | Message;

/** Who made an approval decision: a policy name, `user`, `no-approver`, `approver-threw`. */
export type ApprovalDecider = string;

declare global {
  namespace Harness {
    /**
     * Event types added by plugins (`type` → `data`):
     * `declare global { namespace Harness { interface SessionEventMap { 'todo/write': { items: string[] } } } }`.
     */
    interface SessionEventMap {}
  }
}

/** The core event types plus `Harness.SessionEventMap`. */
export interface SessionEventMap extends Harness.SessionEventMap {
  /** `trace`: the W3C trace context the caller handed the turn, checked (see trace-context.ts). */
  'turn/start': { readonly turn: number; readonly trace?: TraceContext };
  'turn/end': { readonly turn: number; readonly reason: TurnEndReason; readonly failure?: LlmFailure };
  'step/start': { readonly turn: number; readonly step: number };
  'step/end': { readonly turn: number; readonly step: number };
  /** A message entering the surface from the user or a plugin. */
  'user/message': { readonly turn?: number; readonly message: UserMessage };
  'request/header': { readonly header: RequestHeader; readonly reason: 'initial' | 'resume' | 'change' };
  /**
   * The model-visible request of one call, as the adapter received it (after every `llm/stream`
   * middleware), as a delta against the previous snapshot; written just before the call's first
   * chunk. Ignorable (journals without it still read and replay). See `snapshot.ts`.
   */
  'request/snapshot': RequestSnapshot;
  /** One raw stream chunk; the finish chunk keeps the full replay envelope. */
  'assistant/chunk': { readonly turn: number; readonly step: number; readonly chunk: StreamChunk };
  /**
   * The assembled reply (its `source.replayState` pruned in lock-step with its content). `interrupted`
   * marks the kept prefix of a cancelled stream.
   */
  'assistant/message': {
    readonly turn: number;
    readonly step: number;
    readonly message: AssistantMessage;
    readonly finish: FinishReason;
    readonly usage?: TokenUsage;
    readonly interrupted?: true;
  };
  /** A complete tool call, before approval. */
  'tool/call': { readonly turn: number; readonly step: number; readonly callId: CallId; readonly name: string; readonly arguments: string };
  'approval/decided': {
    readonly turn: number;
    readonly step: number;
    readonly callId: CallId;
    readonly decision: 'allow' | 'deny';
    readonly decidedBy: ApprovalDecider;
    readonly reason?: string;
  };
  /** The tool body is about to run (journaled with a checkpoint, so a crash after it is "outcome unknown"). */
  'tool/start': { readonly turn: number; readonly step: number; readonly callId: CallId };
  /** A piece of streamed tool output (not part of the surface). Ignorable. */
  'tool/output': { readonly turn: number; readonly step: number; readonly callId: CallId; readonly text: string };
  'tool/result': {
    readonly turn: number;
    readonly step: number;
    readonly callId: CallId;
    readonly message: ToolResultMessage;
    readonly durationMs?: number;
    /** Set by crash repair: `TOOL_NOT_STARTED` or `TOOL_OUTCOME_UNKNOWN`; or by close-out: `TIMEOUT`, `ABORTED`, … */
    readonly code?: string;
  };
  /** A model call failed and will be retried after `delayMs` (seed 002 14.4). */
  'llm/retry': { readonly turn: number; readonly step: number; readonly attempt: number; readonly maxRetries: number; readonly delayMs: number; readonly failure: LlmFailure };
  /** Replaces surface messages `[start, end)` with `messages` (compaction). */
  'surface/replace': { readonly start: number; readonly end: number; readonly messages: readonly Message[] };
  'compaction/start': { readonly trigger: 'threshold' | 'context-window-exceeded' | 'request'; readonly messageCount: number; readonly estimatedTokens?: number };
  'compaction/summary': { readonly summary: string; readonly provider: string; readonly model: string; readonly usage?: TokenUsage };
  'compaction/end': { readonly outcome: 'compacted' | 'failed'; readonly failure?: LlmFailure; readonly keptMessageCount?: number };
  'session/title': { readonly title: string };
  /**
   * A plugin of the running harness was reloaded, loaded or unloaded (`harness dev`: a saved plugin
   * file or config; or the API), or the attempt failed — then the old generation keeps serving. See
   * {@link PluginReloadRecord}. Ignorable: it never changes the state (a reader without it skips it).
   */
  'plugin/reload': PluginReloadRecord;
}

/**
 * `plugin/reload` data: one change of the running plugin stack, journaled into every open
 * top-level session where it happened — between turns, or inside one (`turn`, `step`), where the
 * call already running keeps the generation it was prepared with (DESIGN "Hot reload": no gap).
 */
export interface PluginReloadRecord {
  /**
   * `reload`: a new generation of a loaded plugin (its file or its config changed); `load`: a plugin
   * added to the config, or loaded once its broken file was fixed; `unload`: a plugin removed from
   * the config; `config`: the config itself did not load (always `failed`; nothing changed).
   */
  readonly action: 'reload' | 'load' | 'unload' | 'config';
  readonly outcome: 'ok' | 'failed';
  /** The plugin (absent for `config`). */
  readonly name?: string;
  /**
   * The generation serving afterwards: the new one; on a failed reload the one still serving; on
   * `unload` the one unloaded. Absent when none serves (a failed load, `config`).
   */
  readonly generation?: number;
  /** The plugin's module file (a plugin named by `module` in the config). */
  readonly module?: string;
  /** The config file (a change that came from editing it). */
  readonly configPath?: string;
  /** Top-level keys of the plugin's config that changed (a reload with a new config). */
  readonly configKeys?: readonly string[];
  /** Why it failed (`PLUGIN_IMPORT_FAILED`, `INVALID_CONFIG`, `PLUGIN_SETUP_FAILED`, …). */
  readonly failure?: Failure;
  /** The synchronous swap of a reload, in ms. */
  readonly swapMs?: number;
  /** Import + setup + swap of a reload, in ms. */
  readonly reloadMs?: number;
  /** The turn (and step) open when it happened; absent between turns. */
  readonly turn?: number;
  readonly step?: number;
}

/** Every event type name: the core ones and those merged into `Harness.SessionEventMap`. */
export type SessionEventType = keyof SessionEventMap & string;

/** One journal record. `ignorable` records may be skipped by a reader that does not know their type. */
export interface SessionEvent<T extends SessionEventType = SessionEventType> {
  readonly seq: number;
  readonly type: T;
  readonly atMs: number;
  readonly data: SessionEventMap[T];
  readonly ignorable?: true;
}

/** Any event, discriminated by `type`. */
export type AnySessionEvent = { [T in SessionEventType]: SessionEvent<T> }[SessionEventType];

/** Where a child session hangs in its parent (`SessionHeader.parentSession`). */
export interface ParentSessionLink {
  readonly sessionId: string;
  readonly callId?: string;
  /** 1 for a child of a top-level session, 2 for a grandchild, … */
  readonly depth: number;
}

/**
 * An event as a run's consumer receives it. `origin` is set only on events forwarded from a child
 * session (never journaled): the child session ids it came through, one hop per level, nearest
 * first (`[child]`, `[child, grandchild]`).
 */
export type ForwardedEvent = AnySessionEvent & { readonly origin?: readonly string[] };

/** Journal line 1. `parent`/`forkSeq` name the source of a fork. */
export interface SessionHeader {
  readonly type: 'session';
  readonly version: 1;
  readonly id: string;
  readonly createdAtMs: number;
  readonly cwd?: string;
  readonly parent?: { readonly sessionId: string; readonly seq: number };
  /**
   * A child session (a subagent, seed 000 "Subagent 接口"): the session that spawned it, the tool
   * call that did (absent when unknown, e.g. an imported session whose call could not be matched),
   * and its delegation depth (1 for a child of a top-level session).
   */
  readonly parentSession?: ParentSessionLink;
  /**
   * Where an imported session came from: its format (`dsh`), file, and (added by the session
   * module) the original session id and the original header's other fields.
   */
  readonly importedFrom?: {
    readonly format: string;
    readonly path: string;
    readonly sessionId?: string;
    readonly header?: { readonly [key: string]: unknown };
  };
}

/** `session/event` sink payload: every appended event, in order, with its session. */
export interface SessionEventDelivery {
  readonly sessionId: string;
  readonly event: AnySessionEvent;
  /** The session's parent, when it is a child session (its header's `parentSession.sessionId`). */
  readonly parentSessionId?: string;
  /** The whole link of a child session (its header's `parentSession`: the parent, the tool call that spawned it, the depth). */
  readonly parentSession?: ParentSessionLink;
}

/**
 * `session/written` payload: one batch the store has written, emitted once per `lease.write` that
 * succeeded, in seq order, by the journal writer of this process. Only written events are in it —
 * never one that a crash could still lose and a repair then replace — so a live view that must
 * show nothing the store does not hold (`harness serve`'s event streams) follows this hook, not
 * `session/event`. Written means: the file store's `write(2)` of the batch returned (the lines are
 * in the operating system: they survive the process being killed, and are fsynced at the next
 * checkpoint, so a machine crash before it can still lose them); the PostgreSQL store's
 * transaction committed (durable).
 */
export interface SessionWrittenBatch {
  readonly sessionId: string;
  /** The session's parent, when it is a child session (its header's `parentSession.sessionId`). */
  readonly parentSessionId?: string;
  /** The batch's events, contiguous, in seq order (frozen: the same objects `session/event` delivered). */
  readonly events: readonly AnySessionEvent[];
  /** Seq of the batch's last event: every event up to it is written. */
  readonly lastSeq: number;
}

declare module '../kernel/bus.ts' {
  interface HookMap {
    'session/event': SinkHook<SessionEventDelivery>;
    'session/written': EmitHook<SessionWrittenBatch>;
  }
}

/** Re-exported for readers of event data. */
export type { AssistantMessage, Message, ToolResultMessage, UserMessage };
