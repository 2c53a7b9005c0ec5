/**
 * The agent loop's hooks and the types its callers and plugins see (seed 000 "Human 边界",
 * "ApproveFn"; DESIGN "The agent loop").
 */
import type { WaterfallHook } from '../kernel/bus.ts';
import type { LlmCallConfig, LlmFailure, Message, ToolSpec } from '../llm/types.ts';
import type { PreparedCall } from '../llm/service.ts';
import type { AppendOptions, SessionState } from '../session/types.ts';
import type { SessionEvent, SessionEventMap, SessionEventType, SessionHeader } from '../session/events.ts';
import type { ToolOutcome } from './closeout.ts';
import type { ToolDefinition } from './tools.ts';

/** What hooks see of a running session: its state and the right to journal events of their own. */
export interface SessionHandle {
  readonly id: string;
  /** The workspace directory (absolute). */
  readonly cwd: string;
  /** The journal's header (a child session's names its parent: `parentSession`). */
  readonly header: SessionHeader;
  /** The live fold. */
  readonly state: SessionState;
  append<T extends SessionEventType>(type: T, data: SessionEventMap[T], options?: AppendOptions): Promise<SessionEvent<T>>;
  checkpoint(): Promise<void>;
}

/** `agent/request`: what the next model call will be. Middleware may change any part. */
export interface RequestProposal {
  readonly session: SessionHandle;
  readonly turn: number;
  readonly step: number;
  readonly config: LlmCallConfig;
  readonly system?: string;
  readonly tools: readonly ToolSpec[];
}

/** `agent/pre-step`: the messages entering a step; a middleware may return others (e.g. compacted). */
export interface PreStepPayload {
  readonly session: SessionHandle;
  readonly turn: number;
  readonly step: number;
  readonly prepared: PreparedCall;
  readonly system?: string;
  readonly tools: readonly ToolSpec[];
  readonly messages: readonly Message[];
  readonly signal: AbortSignal;
}

/** `agent/request-error`: a model call failed; decide whether to try again. */
export interface RequestErrorPayload {
  readonly session: SessionHandle;
  readonly turn: number;
  readonly step: number;
  /** 1 for the first failure of this step's call, 2 for the next, … */
  readonly attempt: number;
  readonly failure: LlmFailure;
  readonly prepared: PreparedCall;
  readonly signal: AbortSignal;
}

/** `retry` re-runs the model call inside the same step (tools already run are not re-run). */
export type RequestErrorDecision = { readonly action: 'retry' } | { readonly action: 'fail'; readonly failure?: LlmFailure };

/** `tools/execute`: one approved call about to run; the centre is the central close-out. */
export interface ToolExecutePayload {
  readonly session: SessionHandle;
  readonly turn: number;
  readonly step: number;
  readonly callId: string;
  readonly tool: ToolDefinition;
  readonly input: unknown;
  readonly signal: AbortSignal;
}

declare module '../kernel/bus.ts' {
  interface HookMap {
    'agent/request': WaterfallHook<RequestProposal, Promise<RequestProposal>>;
    'agent/pre-step': WaterfallHook<PreStepPayload, Promise<readonly Message[]>>;
    'agent/request-error': WaterfallHook<RequestErrorPayload, Promise<RequestErrorDecision>>;
    'tools/execute': WaterfallHook<ToolExecutePayload, Promise<ToolOutcome>>;
  }
}

/** One complete tool call, as the approver sees it (seed 000 `ApproveFn`). */
export interface ApprovalRequest {
  readonly sessionId: string;
  readonly turn: number;
  readonly step: number;
  readonly callId: string;
  readonly name: string;
  /** Raw JSON arguments, as the model wrote them. */
  readonly arguments: string;
  /** The parsed input. */
  readonly input: unknown;
  readonly permission: 'read' | 'write';
  readonly description: string;
  /**
   * Set when the call was made by a child session (a subagent) and the question was passed up to
   * its parent's approver (seed 000 "ApproveFn": approvals inherited with an origin marker): the
   * child session ids it came through, one hop per level, nearest first. `sessionId` is the
   * session that made the call.
   */
  readonly origin?: readonly string[];
}

/** The outcome of an approval. */
export type ApprovalDecision = 'allow' | 'deny';
/** What an approver returns: a decision, or one with who decided (journaled as `decidedBy`) and why. */
export type ApprovalAnswer = ApprovalDecision | { readonly decision: ApprovalDecision; readonly decidedBy?: string; readonly reason?: string };

/**
 * Called exactly once per complete tool call that could run, before it runs. Throwing counts as
 * `deny`; no approver means every call is denied.
 */
export type ApproveFn = (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>;

/** Options of `session.run()` / `session.prompt()`: one turn's signal, approver and model choice. */
export interface RunOptions {
  /** Cancels the turn (e.g. Ctrl-C): the stream stops, running tools are answered as aborted. */
  readonly signal?: AbortSignal;
  readonly approve?: ApproveFn;
  /** This run's reasoning effort (not inherited by later runs). */
  readonly reasoningEffort?: string;
  /** Switch provider / model from this run on. */
  readonly provider?: string;
  readonly model?: string;
}
