/**
 * One session's journal events → OpenTelemetry spans and GenAI metrics: the one function behind both
 * the live plugin (events as they are journaled, from the `session/event` sink) and `harness export
 * --otel` (events read back from a journal). Every time comes from the events' `atMs`, so the spans
 * of a live run and of its journal are the same spans (ids aside) by construction.
 *
 * Spans (names and attributes per the GenAI conventions, see conventions.ts):
 * - `invoke_agent <agent>` (INTERNAL): a turn, `turn/start` → `turn/end`; the root of its own trace,
 *   or a child of the trace context journaled on its `turn/start`, else (a subagent's turn) of the
 *   parent session's `execute_tool` span that ran it, else of the incoming `TRACEPARENT`.
 *   - `step` (INTERNAL): `step/start` → `step/end`.
 *     - `chat <model>` (CLIENT): one model call, from when it could be dispatched (the step's start,
 *       the request header or compaction just before it, or the end of a retry's wait) to its finish
 *       chunk. A failed attempt ends with `error.type` and a `harness.retry` event when it is retried;
 *       the retry is the next `chat` span of the step (`harness.attempt` 2, 3, …).
 *     - `execute_tool <name>` (INTERNAL): one tool call, `tool/call` → `tool/result`, with a
 *       `harness.approval` event (decision, who decided) and `harness.tool.start` when its body ran.
 * Content (prompts, completions, tool arguments and results) is added only with `captureContent`.
 *
 * A journal that stops inside a turn (a crash not yet repaired) gets its open spans ended at its last
 * event by {@link SessionTracer.close}, with `error.type` `INCOMPLETE`. An event recorded earlier
 * than the one before it (a clock that stepped back) is taken at the time before it.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type HrTime, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import {
  SnapshotReader,
  type AnySessionEvent,
  type AssistantMessage,
  type CanonicalMessage,
  type FinishReason,
  type LlmCallConfig,
  type LlmFailure,
  type Message,
  type SessionEvent,
  type TokenUsage,
} from '../../runtime/index.ts';
import { ERROR_TYPE, finishReasonOf, GEN_AI, HARNESS, OPERATION, usageAttributes } from './conventions.ts';
import type { GenAiMetrics } from './metrics.ts';
import { parentFromTraceparent } from './pipeline.ts';

export interface SessionTracerOptions {
  readonly tracer: Tracer;
  /** Where the GenAI client metrics go; absent: no metrics. */
  readonly metrics?: GenAiMetrics;
  /** `gen_ai.conversation.id` of every span. */
  readonly sessionId: string;
  /**
   * The parent of every turn span (an incoming `TRACEPARENT`); absent: each turn starts a trace. A
   * turn's own trace context (journaled on its `turn/start`, e.g. from a `traceparent` header in
   * `harness serve`) and {@link spawnedBy} come first.
   */
  readonly parent?: Context;
  /**
   * A child session (a subagent): the context of the parent's `execute_tool` span that ran the turn
   * starting at `atMs` (see {@link SessionTracer.childParent}); undefined: the turn has no such parent.
   */
  readonly spawnedBy?: (atMs: number) => Context | undefined;
  /** Export prompts, completions, tool arguments and results. Default false. */
  readonly captureContent?: boolean;
  /** `gen_ai.agent.name`, and the turn span's name `invoke_agent <agentName>`. Default `harness`. */
  readonly agentName?: string;
  /** Applied to every content attribute (e.g. the secret redactor's `redactText`). */
  readonly redact?: (text: string) => string;
  /** What an earlier tracer of the session carried over its turn (see {@link SessionTracer.summary}). */
  readonly resume?: SessionTracerSummary;
}

/**
 * What a session's tracer needs from before its next turn, when the live plugin releases the tracer
 * between turns: the last call config (a `request/header` is journaled only when it changes), the last
 * event's time (times never go back), and with `captureContent` the snapshot reader (a
 * `request/snapshot` names messages of earlier turns). No span, no per-call record.
 */
export interface SessionTracerSummary {
  readonly config?: LlmCallConfig;
  readonly lastAtMs: number;
  readonly snapshots?: SnapshotReader;
}

interface CallState {
  readonly startMs: number;
  readonly attempt: number;
  firstChunkMs?: number;
  finishMs?: number;
  finish?: FinishReason;
  usage?: TokenUsage;
  responseModel?: string;
  responseId?: string;
  request?: { readonly system?: string; readonly messages: readonly CanonicalMessage[] };
  retry?: { readonly atMs: number; readonly attributes: Attributes };
}

/** A tool call's span, while the call runs (`endMs` absent) and after: a child session's turn hangs under the call running it. */
interface CallSpan {
  readonly span: SpanContext;
  endMs?: number;
}

interface ToolState {
  readonly name: string;
  readonly arguments: string;
  /** Started at `tool/call`, so that a subagent the call runs can be parented under it while it runs. */
  readonly span: Span;
}

interface StepState {
  readonly step: number;
  readonly span: Span;
  readonly context: Context;
  /** When the next model call of the step can start. */
  callStartMs: number;
  attemptCount: number;
  call?: CallState;
  readonly tools: Map<string, ToolState>;
}

interface TurnState {
  readonly turn: number;
  readonly span: Span;
  readonly context: Context;
  step?: StepState;
  provider?: string;
  model?: string;
  usage: TokenUsage;
  usageReported: boolean;
  readonly input: Message[];
  output?: AssistantMessage;
}

/** Epoch ms → the API's `[seconds, nanoseconds]` (a plain number older than the process would be read as a `performance.now()` offset). */
export function hrTimeOf(ms: number): HrTime {
  const whole = Math.floor(ms);
  return [Math.floor(whole / 1000), (whole % 1000) * 1_000_000 + Math.round((ms - whole) * 1_000_000)];
}

/** Feeds one session's events, in journal order, into spans and metrics. See the module doc. */
export class SessionTracer {
  private readonly options: SessionTracerOptions;
  private readonly agentName: string;
  private readonly snapshots: SnapshotReader | undefined;
  private config: LlmCallConfig | undefined;
  private turn: TurnState | undefined;
  private lastAtMs = 0;
  /** Span of every tool call, by call id: a child session's header names the call that spawned it. */
  private readonly callSpans = new Map<string, CallSpan>();
  /** Child session id → the calls that ran its turns, in order (`subagent/spawn`, `subagent/input`). */
  private readonly childCalls = new Map<string, { readonly atMs: number; readonly call: CallSpan }[]>();

  constructor(options: SessionTracerOptions) {
    this.options = options;
    this.agentName = options.agentName ?? 'harness';
    const resume = options.resume;
    this.snapshots = options.captureContent ? (resume?.snapshots ?? new SnapshotReader()) : undefined;
    this.config = resume?.config;
    this.lastAtMs = resume?.lastAtMs ?? 0;
  }

  /** True when no turn is open: the tracer holds no open span and can be released for {@link summary}. */
  get idle(): boolean {
    return this.turn === undefined;
  }

  /** What a new tracer of this session needs to continue where this one stopped (`resume`). */
  summary(): SessionTracerSummary {
    return { ...(this.config === undefined ? {} : { config: this.config }), lastAtMs: this.lastAtMs, ...(this.snapshots === undefined ? {} : { snapshots: this.snapshots }) };
  }

  /** Takes the session's next event. Never throws for an event it does not know (it is skipped). */
  push(event: AnySessionEvent): void {
    // Times never go back (a wall clock stepped back while recording, a journal stitched from
    // elsewhere): a child span never starts before its parent, no span ends before it starts.
    if (event.atMs < this.lastAtMs) event = { ...event, atMs: this.lastAtMs } as AnySessionEvent;
    this.lastAtMs = event.atMs;
    if (event.type === 'assistant/chunk') {
      this.chunk(event as SessionEvent<'assistant/chunk'>);
      return;
    }
    if (event.type === 'tool/output') return;
    const recorded = this.snapshots?.push(event);
    switch (event.type) {
      case 'turn/start':
        this.startTurn(event as SessionEvent<'turn/start'>);
        return;
      case 'turn/end':
        this.endTurn(event as SessionEvent<'turn/end'>);
        return;
      case 'step/start': {
        const data = (event as SessionEvent<'step/start'>).data;
        if (this.turn !== undefined && this.turn.turn === data.turn) {
          this.endStep(event.atMs, 'INCOMPLETE');
          this.startStep(this.turn, data.step, event.atMs);
        }
        return;
      }
      case 'request/header':
        this.config = (event as SessionEvent<'request/header'>).data.header.config;
        if (this.turn?.step) this.turn.step.callStartMs = event.atMs;
        return;
      case 'compaction/end':
        if (this.turn?.step) this.turn.step.callStartMs = event.atMs;
        return;
      case 'user/message': {
        const data = (event as SessionEvent<'user/message'>).data;
        if (this.turn !== undefined && this.options.captureContent) this.turn.input.push(data.message);
        return;
      }
      case 'request/snapshot': {
        const call = this.openCall(event.atMs, true);
        if (call !== undefined && recorded?.ok) call.request = { ...(recorded.request.system === undefined ? {} : { system: recorded.request.system }), messages: recorded.request.messages };
        return;
      }
      default:
        break;
    }
    const step = this.turn?.step;
    if (step === undefined) return;
    switch (event.type) {
      case 'assistant/message':
        this.message(step, event as SessionEvent<'assistant/message'>);
        return;
      case 'llm/retry': {
        const data = (event as SessionEvent<'llm/retry'>).data;
        const attributes = { [HARNESS.RETRY_ATTEMPT]: data.attempt, [HARNESS.RETRY_MAX_RETRIES]: data.maxRetries, [HARNESS.RETRY_DELAY_MS]: data.delayMs, [ERROR_TYPE]: data.failure.code };
        if (step.call !== undefined) {
          step.call.retry = { atMs: event.atMs, attributes };
          this.endCall(step, event.atMs);
        } else step.span.addEvent(HARNESS.RETRY_EVENT, attributes, hrTimeOf(event.atMs));
        step.callStartMs = event.atMs + data.delayMs;
        return;
      }
      case 'tool/call': {
        const data = (event as SessionEvent<'tool/call'>).data;
        if (step.call !== undefined) this.endCall(step, event.atMs);
        const span = this.startTool(step, data.callId, data.name, event.atMs);
        step.tools.set(data.callId, { name: data.name, arguments: data.arguments, span });
        this.callSpans.set(data.callId, { span: span.spanContext() });
        return;
      }
      case 'approval/decided': {
        const data = (event as SessionEvent<'approval/decided'>).data;
        step.tools
          .get(data.callId)
          ?.span.addEvent(
            HARNESS.APPROVAL_EVENT,
            { [HARNESS.APPROVAL_DECISION]: data.decision, [HARNESS.APPROVAL_DECIDED_BY]: data.decidedBy, ...(data.reason === undefined ? {} : { [HARNESS.APPROVAL_REASON]: data.reason }) },
            hrTimeOf(event.atMs),
          );
        return;
      }
      case 'tool/start': {
        const data = (event as SessionEvent<'tool/start'>).data;
        step.tools.get(data.callId)?.span.addEvent(HARNESS.TOOL_START_EVENT, {}, hrTimeOf(event.atMs));
        return;
      }
      // The subagents plugin's records (plugins import no other plugin: read by shape): which call
      // runs the next turn of which child session.
      case 'subagent/spawn':
      case 'subagent/input': {
        const { callId, childSessionId } = event.data as { callId?: unknown; childSessionId?: unknown };
        const call = typeof callId === 'string' ? this.callSpans.get(callId) : undefined;
        if (call === undefined || typeof childSessionId !== 'string') return;
        const calls = this.childCalls.get(childSessionId) ?? [];
        calls.push({ atMs: event.atMs, call });
        this.childCalls.set(childSessionId, calls);
        return;
      }
      case 'tool/result':
        this.toolResult(step, event as SessionEvent<'tool/result'>);
        return;
      case 'step/end':
        this.endStep(event.atMs);
        return;
      default:
        return;
    }
  }

  /**
   * The parent context of a turn of the child session `childSessionId` that starts at `atMs`: the
   * `execute_tool` span of the last call that ran a turn of it by then (`subagent/spawn`,
   * `subagent/input`), else the span of `callId` (the child header's `parentSession.callId`) — only
   * a call still running at `atMs` (a child's turn runs inside the call that started it; a later one
   * without such a call is a trace of its own, live and from the journal alike). Undefined when no
   * such call.
   */
  childParent(childSessionId: string, callId: string | undefined, atMs: number): Context | undefined {
    const runs = (call: CallSpan | undefined): call is CallSpan => call !== undefined && (call.endMs === undefined || call.endMs >= atMs);
    let found: CallSpan | undefined;
    for (const entry of this.childCalls.get(childSessionId) ?? []) if (entry.atMs <= atMs) found = entry.call;
    if (!runs(found)) found = callId === undefined ? undefined : this.callSpans.get(callId);
    return runs(found) ? trace.setSpanContext(ROOT_CONTEXT, found.span) : undefined;
  }

  /**
   * Ends every span still open (the journal stopped inside a turn) at `atMs` (default: the last
   * event's time) with `error.type` = `code`.
   */
  close(atMs: number = this.lastAtMs, code = 'INCOMPLETE'): void {
    const turn = this.turn;
    if (turn === undefined) return;
    this.endStep(atMs, code);
    this.finishTurn(turn, atMs, 'interrupted', { code, message: `The journal ends inside turn ${turn.turn}.` });
  }

  private startTurn(event: SessionEvent<'turn/start'>): void {
    if (this.turn !== undefined) this.close(event.atMs);
    // The turn's own context (journaled from its caller), then the call that ran it, then the session's.
    const own = event.data.trace === undefined ? undefined : parentFromTraceparent(event.data.trace.traceparent, event.data.trace.tracestate);
    const inherited = own ?? this.options.spawnedBy?.(event.atMs) ?? this.options.parent;
    const parent = inherited ?? ROOT_CONTEXT;
    const span = this.options.tracer.startSpan(
      `${OPERATION.INVOKE_AGENT} ${this.agentName}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: hrTimeOf(event.atMs),
        attributes: {
          [GEN_AI.OPERATION_NAME]: OPERATION.INVOKE_AGENT,
          [GEN_AI.AGENT_NAME]: this.agentName,
          [GEN_AI.CONVERSATION_ID]: this.options.sessionId,
          [HARNESS.TURN]: event.data.turn,
        },
        ...(inherited === undefined ? { root: true } : {}),
      },
      parent,
    );
    this.turn = { turn: event.data.turn, span, context: trace.setSpan(parent, span), usage: {}, usageReported: false, input: [] };
  }

  private startStep(turn: TurnState, step: number, atMs: number): StepState {
    const span = this.options.tracer.startSpan(
      'step',
      { kind: SpanKind.INTERNAL, startTime: hrTimeOf(atMs), attributes: { [GEN_AI.CONVERSATION_ID]: this.options.sessionId, [HARNESS.TURN]: turn.turn, [HARNESS.STEP]: step } },
      turn.context,
    );
    const state: StepState = { step, span, context: trace.setSpan(turn.context, span), callStartMs: atMs, attemptCount: 0, tools: new Map() };
    turn.step = state;
    return state;
  }

  /**
   * The open model call of the current step, begun at the step's call start if it is new. `streaming`:
   * for a chunk or a request snapshot, which after a finished call belong to the next call (a call
   * retried without an `llm/retry`, e.g. after a compaction).
   */
  private openCall(atMs: number, streaming = false): CallState | undefined {
    const step = this.turn?.step;
    if (step === undefined) return undefined;
    if (streaming && step.call?.finish !== undefined) this.endCall(step, atMs);
    if (step.call === undefined) {
      step.attemptCount++;
      step.call = { startMs: Math.min(step.callStartMs, atMs), attempt: step.attemptCount };
    }
    return step.call;
  }

  private chunk(event: SessionEvent<'assistant/chunk'>): void {
    const { chunk } = event.data;
    // A chunk of a step this tracer did not see start (it was loaded mid-turn) is not traced.
    const step = this.turn?.step;
    if (step === undefined || step.step !== event.data.step || this.turn!.turn !== event.data.turn) return;
    const call = this.openCall(event.atMs, true);
    if (call === undefined) return;
    if (chunk.type === 'finish') {
      call.finish = chunk.finish;
      call.finishMs = event.atMs;
      const response = chunk.replayState?.response as { model?: unknown; id?: unknown } | null | undefined;
      if (typeof response === 'object' && response !== null) {
        if (typeof response.model === 'string') call.responseModel = response.model;
        if (typeof response.id === 'string') call.responseId = response.id;
      }
      return;
    }
    if (call.firstChunkMs === undefined) call.firstChunkMs = event.atMs;
    if (chunk.type === 'usage') call.usage = chunk.usage;
  }

  private message(step: StepState, event: SessionEvent<'assistant/message'>): void {
    const data = event.data;
    const call = this.openCall(event.atMs)!;
    if (call.finish === undefined) call.finish = data.finish;
    if (data.usage !== undefined) call.usage = data.usage;
    this.endCall(step, event.atMs, data);
  }

  private endCall(step: StepState, atMs: number, message?: SessionEvent<'assistant/message'>['data'], code?: string): void {
    const call = step.call;
    if (call === undefined) return;
    step.call = undefined;
    const turn = this.turn!;
    const config = this.config;
    const provider = message?.message.source.provider ?? config?.provider ?? 'unknown';
    const model = config?.model ?? message?.message.source.model ?? 'unknown';
    const endMs = call.finishMs ?? atMs;
    const failure = errorOf(call, message, code);
    const attributes: Attributes = {
      [GEN_AI.OPERATION_NAME]: OPERATION.CHAT,
      [GEN_AI.PROVIDER_NAME]: provider,
      [GEN_AI.REQUEST_MODEL]: model,
      [GEN_AI.CONVERSATION_ID]: this.options.sessionId,
      [GEN_AI.REQUEST_STREAM]: true,
      [HARNESS.TURN]: turn.turn,
      [HARNESS.STEP]: step.step,
      [HARNESS.ATTEMPT]: call.attempt,
      ...requestAttributes(config),
      ...usageAttributes(call.usage),
    };
    if (call.responseModel !== undefined) attributes[GEN_AI.RESPONSE_MODEL] = call.responseModel;
    if (call.responseId !== undefined) attributes[GEN_AI.RESPONSE_ID] = call.responseId;
    if (call.finish !== undefined) attributes[GEN_AI.RESPONSE_FINISH_REASONS] = [finishReasonOf(call.finish)];
    const ttfcSeconds = call.firstChunkMs === undefined ? undefined : (call.firstChunkMs - call.startMs) / 1000;
    if (ttfcSeconds !== undefined) attributes[GEN_AI.RESPONSE_TIME_TO_FIRST_CHUNK] = ttfcSeconds;
    if (message?.interrupted) attributes[HARNESS.INTERRUPTED] = true;
    if (failure !== undefined) attributes[ERROR_TYPE] = failure.code;
    if (this.options.captureContent) {
      if (call.request !== undefined) {
        attributes[GEN_AI.INPUT_MESSAGES] = this.content(genAiMessages(call.request.messages));
        if (call.request.system !== undefined) attributes[GEN_AI.SYSTEM_INSTRUCTIONS] = this.content([{ type: 'text', content: call.request.system }]);
      }
      if (message !== undefined) attributes[GEN_AI.OUTPUT_MESSAGES] = this.content([{ ...genAiMessage(message.message), finish_reason: finishReasonOf(message.finish) }]);
    }
    const span = this.options.tracer.startSpan(`${OPERATION.CHAT} ${model}`, { kind: SpanKind.CLIENT, startTime: hrTimeOf(call.startMs), attributes }, step.context);
    if (call.retry !== undefined) span.addEvent(HARNESS.RETRY_EVENT, call.retry.attributes, hrTimeOf(call.retry.atMs));
    if (failure !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
    span.end(hrTimeOf(endMs));
    if (turn.provider === undefined) {
      turn.provider = provider;
      turn.model = model;
    }
    if (message !== undefined && !message.interrupted) turn.output = message.message;
    if (call.usage !== undefined) {
      turn.usage = addUsage(turn.usage, call.usage);
      turn.usageReported = true;
    }
    this.options.metrics?.recordCall({
      provider,
      requestModel: model,
      ...(call.responseModel === undefined ? {} : { responseModel: call.responseModel }),
      durationSeconds: (endMs - call.startMs) / 1000,
      ...(ttfcSeconds === undefined ? {} : { timeToFirstChunkSeconds: ttfcSeconds }),
      ...(call.usage === undefined ? {} : { usage: call.usage }),
      ...(failure === undefined ? {} : { errorType: failure.code }),
    });
  }

  private toolResult(step: StepState, event: SessionEvent<'tool/result'>): void {
    const data = event.data;
    const tool = step.tools.get(data.callId);
    step.tools.delete(data.callId);
    this.endTool(step, data.callId, tool, event.atMs, data);
  }

  private endTool(step: StepState, callId: string, tool: ToolState | undefined, atMs: number, result?: SessionEvent<'tool/result'>['data'], code?: string): void {
    const block = result?.message.content[0];
    const isError = result === undefined || block?.isError === true;
    const errorType = result === undefined ? (code ?? 'INCOMPLETE') : isError ? (result.code ?? 'TOOL_ERROR') : undefined;
    // A result without its call (the tracer was loaded mid-step): the span is the instant of the result.
    const span = tool?.span ?? this.startTool(step, callId, 'unknown', atMs);
    const attributes: Attributes = {};
    if (errorType !== undefined) attributes[ERROR_TYPE] = errorType;
    if (this.options.captureContent) {
      if (tool !== undefined) attributes[GEN_AI.TOOL_CALL_ARGUMENTS] = this.redact(tool.arguments);
      if (block !== undefined) attributes[GEN_AI.TOOL_CALL_RESULT] = this.redact(block.content.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join(''));
    }
    span.setAttributes(attributes);
    if (errorType !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
    span.end(hrTimeOf(atMs));
    const call = this.callSpans.get(callId);
    if (call !== undefined && call.endMs === undefined) call.endMs = atMs;
  }

  private startTool(step: StepState, callId: string, name: string, atMs: number): Span {
    const attributes: Attributes = {
      [GEN_AI.OPERATION_NAME]: OPERATION.EXECUTE_TOOL,
      [GEN_AI.TOOL_NAME]: name,
      [GEN_AI.TOOL_CALL_ID]: callId,
      [GEN_AI.TOOL_TYPE]: 'function',
      [GEN_AI.CONVERSATION_ID]: this.options.sessionId,
      [HARNESS.TURN]: this.turn!.turn,
      [HARNESS.STEP]: step.step,
    };
    return this.options.tracer.startSpan(`${OPERATION.EXECUTE_TOOL} ${name}`, { kind: SpanKind.INTERNAL, startTime: hrTimeOf(atMs), attributes }, step.context);
  }

  private endStep(atMs: number, code?: string): void {
    const step = this.turn?.step;
    if (step === undefined) return;
    if (step.call !== undefined) this.endCall(step, atMs, undefined, code);
    for (const [callId, tool] of step.tools) this.endTool(step, callId, tool, atMs, undefined, code);
    step.tools.clear();
    if (code !== undefined) {
      step.span.setAttribute(ERROR_TYPE, code);
      step.span.setStatus({ code: SpanStatusCode.ERROR, message: code });
    }
    step.span.end(hrTimeOf(atMs));
    this.turn!.step = undefined;
  }

  private endTurn(event: SessionEvent<'turn/end'>): void {
    const turn = this.turn;
    if (turn === undefined || turn.turn !== event.data.turn) return;
    this.endStep(event.atMs);
    this.finishTurn(turn, event.atMs, event.data.reason, event.data.failure);
  }

  private finishTurn(turn: TurnState, atMs: number, reason: string, failure: Pick<LlmFailure, 'code' | 'message'> | undefined): void {
    const attributes: Attributes = { [HARNESS.TURN_END_REASON]: reason };
    if (turn.provider !== undefined) attributes[GEN_AI.PROVIDER_NAME] = turn.provider;
    if (turn.model !== undefined) attributes[GEN_AI.REQUEST_MODEL] = turn.model;
    if (turn.usageReported) Object.assign(attributes, usageAttributes(turn.usage));
    const failed = reason === 'error' || reason === 'aborted' || reason === 'interrupted';
    const code = failure?.code ?? (failed ? reason.toUpperCase() : undefined);
    if (failed && code !== undefined) attributes[ERROR_TYPE] = code;
    if (this.options.captureContent) {
      if (turn.input.length > 0) attributes[GEN_AI.INPUT_MESSAGES] = this.content(genAiMessages(turn.input));
      if (turn.output !== undefined) attributes[GEN_AI.OUTPUT_MESSAGES] = this.content([genAiMessage(turn.output)]);
    }
    turn.span.setAttributes(attributes);
    if (failed) turn.span.setStatus({ code: SpanStatusCode.ERROR, ...(failure?.message === undefined ? {} : { message: failure.message }) });
    turn.span.end(hrTimeOf(atMs));
    this.turn = undefined;
  }

  private redact(text: string): string {
    return this.options.redact === undefined ? text : this.options.redact(text);
  }

  private content(value: unknown): string {
    return this.redact(JSON.stringify(value));
  }
}

/** The failure a call ended with, if it failed (`code`: it was cut off, e.g. `INCOMPLETE`). */
function errorOf(call: CallState, message: SessionEvent<'assistant/message'>['data'] | undefined, code: string | undefined): { code: string; message: string } | undefined {
  const finish = call.finish;
  if (finish !== undefined && (finish.kind === 'error' || finish.kind === 'aborted')) return { code: finish.failure.code, message: finish.failure.message };
  if (message?.interrupted) return { code: 'ABORTED', message: 'The stream was interrupted.' };
  if (code !== undefined) return { code, message: `The call did not finish (${code}).` };
  // A successful finish without an assistant message: the loop refused an empty reply.
  if (message === undefined) return { code: 'EMPTY_RESPONSE', message: 'The model ended its reply without any content.' };
  return undefined;
}

function requestAttributes(config: LlmCallConfig | undefined): Attributes {
  const out: Attributes = {};
  if (config === undefined) return out;
  if (typeof config.maxTokens === 'number') out[GEN_AI.REQUEST_MAX_TOKENS] = config.maxTokens;
  if (typeof config.temperature === 'number') out[GEN_AI.REQUEST_TEMPERATURE] = config.temperature;
  if (Array.isArray(config.stop)) out[GEN_AI.REQUEST_STOP_SEQUENCES] = [...config.stop];
  return out;
}

function addUsage(total: TokenUsage, usage: TokenUsage): TokenUsage {
  const sum: { -readonly [K in keyof TokenUsage]: number } = { ...total };
  for (const key of Object.keys(usage) as (keyof TokenUsage)[]) {
    const value = usage[key];
    if (typeof value === 'number') sum[key] = (sum[key] ?? 0) + value;
  }
  return sum;
}

/** A message in the conventions' `gen_ai.input.messages` / `gen_ai.output.messages` shape. */
function genAiMessage(message: Pick<Message, 'role' | 'content'>): { role: string; parts: unknown[] } {
  const parts: unknown[] = [];
  let role: string = message.role;
  for (const block of message.content) {
    switch (block.type) {
      case 'text':
        parts.push({ type: 'text', content: block.text });
        break;
      case 'reasoning':
        parts.push({ type: 'reasoning', content: block.text });
        break;
      case 'tool-call':
        parts.push({ type: 'tool_call', id: block.id, name: block.name, arguments: parseJson(block.arguments) });
        break;
      case 'tool-result':
        role = 'tool';
        parts.push({ type: 'tool_call_response', id: block.toolCallId, response: block.content.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('') });
        break;
      default:
        parts.push({ type: block.type });
    }
  }
  return { role, parts };
}

function genAiMessages(messages: readonly Pick<Message, 'role' | 'content'>[]): unknown[] {
  return messages.map(genAiMessage);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
