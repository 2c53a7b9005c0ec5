/**
 * The agent loop's hooks and the types its callers and plugins see (seed 000 "Human 边界",
 * "ApproveFn"; DESIGN "The agent loop").
 */
import type { WaterfallHook } from '../kernel/bus.ts';
import type { LlmCallConfig, LlmFailure, Message, ToolSpec } from '../llm/types.ts';
import type { PreparedCall } from '../llm/service.ts';
import type { ToolOutcome } from './closeout.ts';
import type { ToolDefinition } from './tools.ts';
import type { ApproveFn } from './approval.ts';
import type { SessionHandle } from './handle.ts';
import type { TraceContext } from '../session/trace-context.ts';

export type { ApprovalAnswer, ApprovalDecision, ApprovalRequest, ApproveFn } from './approval.ts';
export type { SessionHandle } from './handle.ts';

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
  /**
   * The W3C trace context this turn belongs to (e.g. a request's `traceparent` / `tracestate`
   * headers): journaled on its `turn/start` after a strict format check, for tracing plugins to
   * parent the turn's spans. A malformed one is ignored with an `INVALID_TRACE_CONTEXT` warning
   * (counted), never an error.
   */
  readonly trace?: TraceContext;
}
