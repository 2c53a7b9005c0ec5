/**
 * The agent loop (seed 000 "Human 边界", "Agent 运行循环"; DESIGN "The agent loop").
 *
 * `session.run(input, { signal, approve })` runs one turn and yields the session's events as they
 * are journaled (stream chunks live). Per step: `agent/request` proposes the call → `prepareCall` →
 * `agent/pre-step` may rewrite the entering messages → `request/header` when it changed →
 * `ctx.llm.stream` → assemble → `assistant/message` → approved tool calls through `tools/execute` →
 * next step, until a step ends without tool calls. Nothing throws into the loop: a failure becomes
 * events and a `turn/end` with its reason. History is always the fold's surface.
 */
import { randomUUID } from 'node:crypto';
import type { HookBus } from '../kernel/bus.ts';
import { HarnessError, getErrorInfo } from '../kernel/errors.ts';
import { secrets, type SecretStream } from '../kernel/secrets.ts';
import { BlockAssembler } from '../llm/assembler.ts';
import { callConfigEquals, markAgentLoopRequest, type RetryPolicyConfig } from '../llm/call-config.ts';
import { failureOf, llmFailure, pluginFailure } from '../llm/errors.ts';
import { createAssistantMessage, createToolResultMessage, createUserMessage, messageText } from '../llm/message.ts';
import type { LlmService, PreparedCall } from '../llm/service.ts';
import {
  OBSERVE_REQUEST,
  type AssistantMessage,
  type GenerateOptions,
  type LlmCallConfig,
  type LlmFailure,
  type Message,
  type StreamChunk,
  type TokenUsage,
  type ToolCallBlock,
  type ToolSpec,
  type UserMessage,
} from '../llm/types.ts';
import { RequestRecorder } from '../session/snapshot.ts';
import { checkTraceContext, type TraceContext } from '../session/trace-context.ts';
import type { AnySessionEvent, ForwardedEvent, RequestHeader, SessionEvent, SessionEventMap, SessionEventType, TurnEndReason } from '../session/events.ts';
import type { AppendOptions, SessionJournal, SessionState } from '../session/types.ts';
import { errorOutcome, parseToolCall, runTool, type ToolOutcome } from './closeout.ts';
import type { ApprovalAnswer, ApprovalRequest, RequestErrorDecision, RunOptions, SessionHandle } from './hooks.ts';
import type { ToolDefinition, ToolRegistry } from './tools.ts';
import { EventChannel } from './channel.ts';
import { ChunkDrain } from './chunk-drain.ts';

export interface AgentSessionOptions {
  readonly journal: SessionJournal;
  readonly bus: HookBus;
  readonly llm: LlmService;
  readonly tools: ToolRegistry;
  /**
   * The call config a session starts with (a journal's last header wins for provider and model).
   * Absent: a run must name its provider and model (or resume a journal that has a header), else it
   * throws `NO_DEFAULT_MODEL` — the runtime never guesses a model.
   */
  readonly defaults?: { readonly provider: string; readonly model: string; readonly reasoningEffort?: string; readonly system?: string };
  /** The config file the defaults come from, named in the `NO_DEFAULT_MODEL` error. */
  readonly configPath?: string;
  readonly cwd: string;
  readonly retryPolicy?: RetryPolicyConfig;
  /**
   * Steps per turn before the turn ends with `MAX_STEPS_EXCEEDED`. Default 100; 0 or less (or
   * `Infinity`) means no limit. See {@link resolveMaxSteps}.
   */
  readonly maxSteps?: number;
  /** Called once the session is closed. */
  readonly onClose?: () => void;
  /** Mints the ids of the messages the loop makes (default `crypto.randomUUID`; a cassette re-run counts, so re-runs are equal). */
  readonly newId?: () => string;
}

/** Input of a run: a prompt (becomes one user message), a user message, or several. */
export type RunInput = string | UserMessage | readonly UserMessage[];

/**
 * What `session.prompt()` returns: one fixed shape for every successful turn (seed 003
 * "调用结果：固定外形"; failures throw instead).
 */
export interface TurnResult {
  readonly sessionId: string;
  /** The turn's number in the session (1-based). */
  readonly turn: number;
  /**
   * How the turn ended: `completed`, or `max-tokens` when the final reply was cut at the output
   * token limit (its text is then partial).
   */
  readonly reason: Extract<TurnEndReason, 'completed' | 'max-tokens'>;
  /** The turn's final assistant message (the one without tool calls that ended it), as journaled. */
  readonly message: AssistantMessage;
  /** The text blocks of `message`, concatenated (reasoning and tool calls excluded). */
  readonly text: string;
  /**
   * Tokens of every model call of the turn (all steps), summed per class; a class no call
   * reported is absent, never 0 (seed 002 `TokenUsage`).
   */
  readonly usage: TokenUsage;
  /** Model steps the turn took (1 when the model answered without calling a tool). */
  readonly stepCount: number;
  /** When the turn started (ms since the epoch, as journaled on `turn/start`). */
  readonly startedAtMs: number;
  /** Wall time from `turn/start` to `turn/end`, in ms. */
  readonly durationMs: number;
}

/** Trace contexts refused per harness (its bus): the count the `INVALID_TRACE_CONTEXT` warning carries. */
const ignoredTraceContexts = new WeakMap<HookBus, number>();
/** parseToolCall lists the known tools only for an unknown one. */
const NO_TOOL_IDS: readonly string[] = Object.freeze([]);

type StepEnd = { readonly reason: 'continue' } | { readonly reason: Exclude<TurnEndReason, 'interrupted'>; readonly failure?: LlmFailure };

/**
 * A session of the agent loop (seed 000), made by `harness.createSession()` / `openSession()`:
 * `prompt()` for a turn's answer, `run()` for its live events, `state` for the fold, `close()`.
 */
export class AgentSession {
  private readonly options: AgentSessionOptions;
  private readonly journal: SessionJournal;
  private readonly handle: SessionHandle;
  private readonly resumed: boolean;
  private headerWritten = false;
  /** Journals each call's model-visible request (`request/snapshot`). */
  private readonly recorder = new RequestRecorder();
  private running = false;
  private channel: EventChannel<ForwardedEvent> | null = null;

  constructor(options: AgentSessionOptions) {
    this.options = options;
    this.journal = options.journal;
    this.resumed = options.journal.state.lastSeq > 0;
    const session = this;
    this.handle = Object.freeze({
      id: options.journal.id,
      cwd: options.cwd,
      header: options.journal.header,
      get state() {
        return session.journal.state;
      },
      append: <T extends SessionEventType>(type: T, data: SessionEventMap[T], appendOptions?: AppendOptions) => session.append(type, data, appendOptions),
      checkpoint: () => session.journal.checkpoint(),
    });
  }

  get id(): string {
    return this.journal.id;
  }
  get path(): string {
    return this.journal.path;
  }
  get state(): SessionState {
    return this.journal.state;
  }
  /** The view of this session that hooks receive. */
  get session(): SessionHandle {
    return this.handle;
  }

  /**
   * Runs one turn. Yields every event as it is journaled, and the events of child sessions (a
   * subagent a tool runs) passed on with their `origin` (never journaled here: the child has its
   * own journal). Breaking out of the iteration aborts the turn (and still closes it in the journal).
   * @throws HarnessError `SESSION_BUSY` when a run is already in progress; `NO_DEFAULT_MODEL` when
   *   neither the options, the journal's last header nor the config's defaults name a provider and
   *   model (nothing is journaled then).
   */
  run(input: RunInput, options: RunOptions = {}): AsyncIterable<ForwardedEvent> {
    if (this.running) throw new HarnessError('SESSION_BUSY', `Session ${this.id} is already running a turn; wait for it to end or abort it.`);
    this.baseConfig(options); // throws NO_DEFAULT_MODEL before the turn starts
    this.running = true;
    // The consumer sees the end only once the turn is closed in the journal.
    const channel: EventChannel<ForwardedEvent> = new EventChannel<ForwardedEvent>((): Promise<void> => done);
    this.channel = channel;
    const controller = new AbortController();
    // The caller's signal aborts this turn's controller through a listener removed when the turn
    // ends — not `AbortSignal.any`, whose dependent signal stays registered with a long-lived
    // parent signal (one per turn, never released while the parent lives).
    const parent = options.signal;
    const forward = (): void => controller.abort(parent!.reason);
    if (parent !== undefined) {
      if (parent.aborted) controller.abort(parent.reason);
      else parent.addEventListener('abort', forward, { once: true });
    }
    const signal = controller.signal;
    const done: Promise<void> = this.runTurn(input, { ...options, signal })
      .then(
        () => channel.close(),
        (error) => channel.fail(error),
      )
      .finally(() => {
        parent?.removeEventListener('abort', forward);
        this.running = false;
        this.channel = null;
      });
    return new RunIterable(channel, controller, done);
  }

  /**
   * Runs one turn and returns its answer — the final assistant message, its text, the turn's
   * usage and end reason — without walking events (seed 003 "调用结果：固定外形": one success
   * shape, failures throw). Every event is journaled as with `run()`.
   * @throws HarnessError `SESSION_BUSY` when a turn is already running; when the turn ends in error
   *   or is aborted, a HarnessError with the turn's failure code (e.g. `RATE_LIMIT`, `NO_ADAPTER`,
   *   `MAX_STEPS_EXCEEDED`, `ABORTED`), its journaled `failure` plus `sessionId`, `turn` and
   *   `endReason` (`error` | `aborted`).
   */
  async prompt(input: RunInput, options: RunOptions = {}): Promise<TurnResult> {
    let start: SessionEvent<'turn/start'> | undefined;
    let end: SessionEvent<'turn/end'> | undefined;
    let final: SessionEventMap['assistant/message'] | undefined;
    let usage: TokenUsage = {};
    let stepCount = 0;
    for await (const event of this.run(input, options)) {
      if (event.origin !== undefined) {
        // A child session's event: its usage is part of this turn's; nothing else of it is.
        if (event.type === 'assistant/message' && event.data.usage) usage = addUsage(usage, event.data.usage);
        continue;
      }
      if (event.type === 'turn/start') start = event;
      else if (event.type === 'step/start') stepCount++;
      else if (event.type === 'assistant/message') {
        final = event.data;
        if (event.data.usage) usage = addUsage(usage, event.data.usage);
      } else if (event.type === 'turn/end') end = event;
    }
    if (start === undefined || end === undefined) throw new HarnessError('TURN_INCOMPLETE', `Session ${this.id}: the turn's run ended without its turn/start and turn/end events.`);
    const { turn, reason, failure } = end.data;
    if (reason !== 'completed' && reason !== 'max-tokens') {
      const fallback = { code: reason === 'aborted' ? 'ABORTED' : 'UNKNOWN', message: `Turn ${turn} of session ${this.id} ended with "${reason}".` };
      throw HarnessError.fromFailure({ ...(failure ?? fallback), sessionId: this.id, turn, endReason: reason });
    }
    if (final === undefined || final.interrupted)
      throw new HarnessError('TURN_INCOMPLETE', `Turn ${turn} of session ${this.id} ended "${reason}" without a final assistant message.`, { details: { sessionId: this.id, turn } });
    return Object.freeze({
      sessionId: this.id,
      turn,
      reason,
      message: final.message,
      text: messageText(final.message),
      usage: Object.freeze(usage),
      stepCount,
      startedAtMs: start.atMs,
      durationMs: end.atMs - start.atMs,
    });
  }

  /** Runs a turn to its end and returns how it ended (events are journaled but not yielded). */
  async runToEnd(input: RunInput, options: RunOptions = {}): Promise<SessionEvent<'turn/end'>> {
    let last: AnySessionEvent | undefined;
    for await (const event of this.run(input, options)) if (event.type === 'turn/end' && event.origin === undefined) last = event;
    return last as SessionEvent<'turn/end'>;
  }

  /** Flushes and releases the journal. */
  async close(): Promise<void> {
    await this.journal.close();
    this.options.onClose?.();
  }

  private async append<T extends SessionEventType>(type: T, data: SessionEventMap[T], options?: AppendOptions): Promise<SessionEvent<T>> {
    const event = await this.journal.append(type, data, options);
    this.channel?.push(event as AnySessionEvent);
    return event;
  }

  /** `append` without a promise when the journal took the event at once (no `session/event` sink to wait for). */
  private appendNow<T extends SessionEventType>(type: T, data: SessionEventMap[T]): SessionEvent<T> | Promise<SessionEvent<T>> {
    const appended = this.journal.append(type, data);
    if (appended instanceof Promise) {
      return appended.then((event) => {
        this.channel?.push(event as AnySessionEvent);
        return event;
      });
    }
    this.channel?.push(appended as AnySessionEvent);
    return appended;
  }

  private async runTurn(input: RunInput, options: RunOptions & { signal: AbortSignal }): Promise<void> {
    const turn = this.journal.state.turnCount + 1;
    const trace = this.traceOf(turn, options.trace);
    await this.append('turn/start', trace === undefined ? { turn } : { turn, trace });
    let end: StepEnd;
    try {
      for (const message of toMessages(input, this.options.newId)) await this.append('user/message', { turn, message });
      end = await this.runSteps(turn, options);
    } catch (error) {
      end = { reason: 'error', failure: internalFailure(error) };
    }
    if (end.reason === 'continue') end = { reason: 'completed' };
    await this.append('turn/end', { turn, reason: end.reason, ...(end.failure ? { failure: end.failure } : {}) });
    await this.journal.checkpoint();
  }

  /** The run's trace context as it may be journaled; a malformed one is reported (counted) and dropped. */
  private traceOf(turn: number, value: unknown): TraceContext | undefined {
    if (value === undefined) return undefined;
    const { trace, problem } = checkTraceContext(value);
    if (problem !== undefined) {
      const bus = this.options.bus;
      const count = (ignoredTraceContexts.get(bus) ?? 0) + 1;
      ignoredTraceContexts.set(bus, count);
      bus.report({
        level: 'warning',
        code: 'INVALID_TRACE_CONTEXT',
        source: 'session',
        message: `Turn ${turn} of session ${this.id}: ${problem}, so it was ignored (W3C trace context: traceparent 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>)${trace === undefined ? '; the turn starts a trace of its own' : ''}. ${count} ignored by this harness so far.`,
      });
    }
    return trace;
  }

  private async runSteps(turn: number, options: RunOptions & { signal: AbortSignal }): Promise<StepEnd> {
    const maxSteps = resolveMaxSteps(this.options.maxSteps);
    for (let step = 1; step <= maxSteps; step++) {
      if (options.signal.aborted) return { reason: 'aborted', failure: failureOf(options.signal.reason, options.signal) };
      await this.append('step/start', { turn, step });
      let end: StepEnd;
      try {
        end = await this.runStep(turn, step, options);
      } catch (error) {
        end = { reason: options.signal.aborted ? 'aborted' : 'error', failure: options.signal.aborted ? failureOf(options.signal.reason, options.signal) : internalFailure(error) };
      }
      await this.closePendingCalls(turn, step, options.signal);
      await this.append('step/end', { turn, step });
      if (end.reason !== 'continue') return end;
    }
    return {
      reason: 'error',
      failure: new HarnessError('MAX_STEPS_EXCEEDED', `The turn took more than ${maxSteps} steps and was stopped; raise maxSteps if this task needs more.`).failure as LlmFailure,
    };
  }

  private async runStep(turn: number, step: number, options: RunOptions & { signal: AbortSignal }): Promise<StepEnd> {
    const { bus, llm, tools } = this.options;
    const signal = options.signal;
    for (let attempt = 1; ; attempt++) {
      // 1. What the call will be.
      const proposal = await bus.waterfall(
        'agent/request',
        {
          session: this.handle,
          turn,
          step,
          config: this.baseConfig(options),
          ...(this.options.defaults?.system === undefined ? {} : { system: this.options.defaults.system }),
          tools: tools.specs(),
        },
        async (p) => p,
      );
      let prepared: PreparedCall;
      try {
        prepared = await llm.prepareCall(proposal.config, { retryPolicy: this.options.retryPolicy });
      } catch (error) {
        return { reason: 'error', failure: failureOf(error) };
      }
      // 2. The messages entering the step (compaction may rewrite them).
      const messages = await bus.waterfall(
        'agent/pre-step',
        {
          session: this.handle,
          turn,
          step,
          prepared,
          ...(proposal.system === undefined ? {} : { system: proposal.system }),
          tools: proposal.tools,
          messages: this.journal.state.messages,
          signal,
        },
        async (p) => p.messages,
      );
      // 3. The header, when it changed (or first after a resume).
      await this.writeHeader(prepared, proposal.system, proposal.tools);
      // 4. The call.
      await this.journal.checkpoint();
      const outcome = await this.streamCall(turn, step, prepared, messages, proposal.system, proposal.tools, signal);
      if (outcome.kind === 'ok') return this.afterMessage(turn, step, outcome.message, options);
      if (outcome.kind === 'aborted') return { reason: 'aborted', failure: outcome.failure };
      // 5. A failed call: retry in the same step, or end the turn with the error.
      if (signal.aborted) return { reason: 'aborted', failure: failureOf(signal.reason, signal) };
      const decision: RequestErrorDecision = await bus.waterfall(
        'agent/request-error',
        {
          session: this.handle,
          turn,
          step,
          attempt,
          failure: outcome.failure,
          prepared,
          signal,
        },
        async (): Promise<RequestErrorDecision> => ({ action: 'fail' }),
      );
      if (signal.aborted) return { reason: 'aborted', failure: failureOf(signal.reason, signal) };
      if (decision.action !== 'retry') return { reason: 'error', failure: decision.failure ?? outcome.failure };
    }
  }

  private async streamCall(
    turn: number,
    step: number,
    prepared: PreparedCall,
    messages: readonly Message[],
    system: string | undefined,
    tools: readonly ToolSpec[],
    signal: AbortSignal,
  ): Promise<{ kind: 'ok'; message: SessionEventMap['assistant/message'] } | { kind: 'failed' | 'aborted'; failure: LlmFailure }> {
    const request = markAgentLoopRequest({
      ...prepared.config,
      messages,
      ...(system === undefined ? {} : { system }),
      tools,
      signal,
      sessionId: this.id,
      purpose: 'agent',
      // What the adapter receives (after the llm/stream middleware) is journaled before its first chunk.
      [OBSERVE_REQUEST]: (sent: GenerateOptions) => void observed.push(sent),
    });
    const observed: GenerateOptions[] = [];
    const assembler = new BlockAssembler();
    const journal = this.journal;
    const chunks = prepared.stream(request)[Symbol.asyncIterator]();
    /** Journals the chunk and passes it on; a promise only when something must be waited for. */
    const record = (chunk: StreamChunk): void | Promise<void> => {
      assembler.push(chunk);
      const appended = this.appendNow('assistant/chunk', { turn, step, chunk });
      if (appended instanceof Promise) return appended.then(() => undefined);
    };
    const drain = new ChunkDrain(
      chunks,
      (chunk) => {
        if (observed.length === 0) return record(chunk);
        return (async () => {
          for (const sent of observed.splice(0)) await this.append('request/snapshot', this.recorder.snapshot(turn, step, sent, journal.state.messages), { ignorable: true });
          await record(chunk);
        })();
      },
      (error) => {
        // A middleware's throw (not a veto: those are HarnessErrors and end the turn as before; not an
        // abort) is the call's terminal finish{error, PLUGIN_ERROR}, journaled like any finish; it is
        // not retried. Any error, not only a TypeError: the adapter's own failures never get here (the
        // boundary turns them into a finish chunk), so what is thrown here was thrown by a middleware.
        if (HarnessError.is(error) || signal.aborted) throw error;
        return middlewareFailureChunk(error, this.options.bus);
      },
    );
    try {
      await drain.run();
    } finally {
      if (!drain.ended) await chunks.return?.();
    }
    const result = assembler.result();
    const { provider, model } = prepared.config;
    if (result.finish.kind === 'aborted') {
      const kept = assembler.interruptedBlocks();
      if (kept.length > 0) {
        const message = createAssistantMessage({ ...this.idOption(), content: kept, provider, model });
        await this.append('assistant/message', { turn, step, message, finish: result.finish, interrupted: true, ...(result.usage ? { usage: result.usage } : {}) });
      }
      return { kind: 'aborted', failure: result.finish.failure };
    }
    if (result.finish.kind === 'error') return { kind: 'failed', failure: result.finish.failure };
    if (result.content.length === 0 && result.finish.kind === 'stop') {
      return { kind: 'failed', failure: llmFailure('EMPTY_RESPONSE', `Provider "${provider}" (model ${model}) ended its reply without any content.`) };
    }
    const message = createAssistantMessage({ ...this.idOption(), content: result.content, provider, model, ...(result.replayState ? { replayState: result.replayState } : {}) });
    const data = { turn, step, message, finish: result.finish, ...(result.usage ? { usage: result.usage } : {}) };
    await this.append('assistant/message', data);
    return { kind: 'ok', message: data };
  }

  private async afterMessage(turn: number, step: number, data: SessionEventMap['assistant/message'], options: RunOptions & { signal: AbortSignal }): Promise<StepEnd> {
    const calls = data.message.content.filter((block): block is ToolCallBlock => block.type === 'tool-call');
    if (calls.length > 0) {
      await this.runToolCalls(turn, step, calls, options);
      if (options.signal.aborted) return { reason: 'aborted', failure: failureOf(options.signal.reason, options.signal) };
      return { reason: 'continue' };
    }
    if (data.finish.kind === 'max-tokens') return { reason: 'max-tokens' };
    return { reason: 'completed' };
  }

  /**
   * Journals every call, asks for approval once per runnable call (in call order), runs each
   * approved call as soon as it is approved (calls run concurrently), and journals the results in
   * call order.
   */
  private async runToolCalls(turn: number, step: number, calls: readonly ToolCallBlock[], options: RunOptions & { signal: AbortSignal }): Promise<void> {
    const { tools, bus } = this.options;
    const signal = options.signal;
    // The per-call records are appended without an await each when the journal takes them at once
    // (an async hop per record was ~1 KB of promises per tool call).
    for (const call of calls) {
      const appended = this.appendNow('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.arguments });
      if (appended instanceof Promise) await appended;
    }
    // A call that does not run has its outcome at once: no promise for it.
    const outcomes: (ToolOutcome | Promise<ToolOutcome>)[] = new Array(calls.length);
    // Calls approved at once wait in a group: their tool/start records share one checkpoint (one
    // fsync, not one per call), then their bodies start in call order. The group starts as soon as
    // an approval has to be waited for (a person asked), so what was approved before runs meanwhile;
    // every body still starts only after an fsync that covers its tool/start.
    let group: { readonly index: number; readonly tool: ToolDefinition; readonly input: unknown }[] = [];
    const startGroup = async (): Promise<void> => {
      if (group.length === 0) return;
      const starting = group;
      group = [];
      await this.journal.checkpoint();
      for (const { index, tool, input } of starting) outcomes[index] = this.execute(turn, step, calls[index]!, tool, input, signal, bus, options.approve, config);
    };
    // Read once, not per call: a state read between the calls' records finishes the fold's pending
    // list, O(pending calls) each — quadratic in the calls of one message.
    const config = this.journal.state.header?.config;
    for (let index = 0; index < calls.length; index++) {
      const call = calls[index]!;
      const tool = tools.get(call.name);
      // The known names are listed only in an unknown tool's error (an array per call otherwise).
      const parsed = parseToolCall(tool, call.name, call.arguments, tool === undefined ? tools.ids() : NO_TOOL_IDS);
      if (!parsed.ok) {
        outcomes[index] = parsed.outcome;
        continue;
      }
      if (signal.aborted) {
        outcomes[index] = errorOutcome('ABORTED', 'The turn was aborted before this tool call ran.');
        continue;
      }
      const request: ApprovalRequest = {
        sessionId: this.id,
        turn,
        step,
        callId: call.id,
        name: call.name,
        arguments: call.arguments,
        input: parsed.input,
        permission: parsed.tool.permission,
        description: parsed.tool.description,
      };
      // No await where nothing is waited for: an approver that answers at once, records the journal takes at once.
      const decided = decide(options.approve, request);
      let answer: Decided;
      if (decided instanceof Promise) {
        // Someone is being asked: what was approved before runs meanwhile.
        const starting = startGroup();
        starting.catch(() => undefined); // a failed checkpoint is thrown below, once the answer is in
        answer = await decided;
        await starting;
      } else answer = decided;
      const decisionAppended = this.appendNow('approval/decided', {
        turn,
        step,
        callId: call.id,
        decision: answer.decision,
        decidedBy: answer.decidedBy,
        ...(answer.reason ? { reason: answer.reason } : {}),
      });
      if (decisionAppended instanceof Promise) await decisionAppended;
      if (answer.decision !== 'allow') {
        outcomes[index] = errorOutcome('DENIED', `This tool call was denied (${answer.decidedBy}${answer.reason ? `: ${answer.reason}` : ''}); it did not run.`);
        continue;
      }
      if (signal.aborted) {
        outcomes[index] = errorOutcome('ABORTED', 'The turn was aborted before this tool call ran.');
        continue;
      }
      const started = this.appendNow('tool/start', { turn, step, callId: call.id });
      if (started instanceof Promise) await started;
      group.push({ index, tool: parsed.tool, input: parsed.input });
    }
    await startGroup();
    // Results enter the history in call order, each as soon as it and those before it are done.
    for (let i = 0; i < calls.length; i++) {
      const pending = outcomes[i]!;
      const outcome = pending instanceof Promise ? await pending : pending;
      const call = calls[i]!;
      const message = createToolResultMessage({ ...this.idOption(), callId: call.id, content: outcome.content, isError: outcome.isError });
      const appended = this.appendNow('tool/result', { turn, step, callId: call.id, message, durationMs: outcome.durationMs, ...(outcome.code ? { code: outcome.code } : {}) });
      if (appended instanceof Promise) await appended;
    }
  }

  private async execute(
    turn: number,
    step: number,
    call: ToolCallBlock,
    tool: ToolDefinition,
    input: unknown,
    signal: AbortSignal,
    bus: HookBus,
    approve: RunOptions['approve'],
    config: LlmCallConfig | undefined,
  ): Promise<ToolOutcome> {
    const channel = this.channel;
    let journaledChars = 0;
    const cap = tool.maxOutputChars ?? 16_000;
    const startedAtMs = performance.now();
    // Live output is masked piece by piece: a secret split across two pieces is held back until it
    // is whole. Made at the first piece: most calls stream nothing.
    let masked: SecretStream | undefined;
    const emit = (text: string): void => {
      // Streamed output is shown live; the journal keeps at most the output cap of it.
      if (text === '' || (cap > 0 && journaledChars >= cap)) return;
      const piece = cap > 0 ? text.slice(0, cap - journaledChars) : text;
      journaledChars += piece.length;
      void this.append('tool/output', { turn, step, callId: call.id, text: piece }, { ignorable: true }).catch(() => undefined);
    };
    try {
      return await bus.waterfall('tools/execute', { session: this.handle, turn, step, callId: call.id, tool, input, signal }, (payload) =>
        runTool(payload.tool, payload.input, {
          callId: payload.callId,
          sessionId: this.id,
          cwd: this.options.cwd,
          signal: payload.signal,
          turn,
          step,
          session: this.handle,
          config,
          approve,
          // One hop per level: the child's own origin (its children) goes after the child's id.
          onForward: (event, hop) => channel?.push(Object.freeze({ ...event, origin: [hop, ...(event.origin ?? [])] }) as ForwardedEvent),
          onOutput: (text) => {
            masked ??= secrets().stream();
            emit(masked.push(text));
          },
        }),
      );
    } catch (error) {
      // A tools/execute middleware failed: the call still gets its one result.
      return errorOutcome(
        HarnessError.is(error) ? error.code : 'TOOL_FAILED',
        `The tool call failed: ${error instanceof Error ? error.message : String(error)}`,
        Math.round(performance.now() - startedAtMs),
      );
    } finally {
      if (masked !== undefined) emit(masked.flush()); // the end of the output, held back in case it began a secret
    }
  }

  /** Every journaled call of the step gets exactly one result, even when the step failed midway. */
  private async closePendingCalls(turn: number, step: number, signal: AbortSignal): Promise<void> {
    for (const pending of this.journal.state.pendingToolCalls) {
      if (pending.turn !== turn || pending.step !== step) continue;
      const code = signal.aborted ? 'ABORTED' : 'TOOL_NOT_RUN';
      const message = createToolResultMessage({
        ...this.idOption(),
        callId: pending.callId,
        content: signal.aborted ? 'The turn was aborted; this tool call did not complete.' : 'This tool call did not run.',
        isError: true,
      });
      await this.append('tool/result', { turn, step, callId: pending.callId, message, code });
    }
  }

  private idOption(): { id?: string } {
    return this.options.newId === undefined ? {} : { id: this.options.newId() };
  }

  private baseConfig(options: RunOptions): LlmCallConfig {
    const last = this.journal.state.header?.config;
    const defaults = this.options.defaults;
    const provider = options.provider ?? last?.provider ?? defaults?.provider;
    const model = options.model ?? (options.provider === undefined ? last?.model : undefined) ?? defaults?.model;
    if (provider === undefined || model === undefined) {
      const where = this.options.configPath ?? 'the config';
      const missing = provider === undefined ? 'no provider was given' : `provider "${provider}" was given without a model`;
      throw new HarnessError(
        'NO_DEFAULT_MODEL',
        `No model to call: ${where} has no defaults and ${missing}. Add defaults: { provider, model } to ${where}, or pass provider and model to the run (--provider <id> --model <id> on the command line).`,
        { details: { ...(this.options.configPath ? { path: this.options.configPath } : {}), ...(provider === undefined ? {} : { provider }) } },
      );
    }
    const reasoningEffort = options.reasoningEffort ?? defaults?.reasoningEffort;
    return { provider, model, ...(reasoningEffort === undefined ? {} : { reasoningEffort }) };
  }

  private async writeHeader(prepared: PreparedCall, system: string | undefined, tools: readonly ToolSpec[]): Promise<void> {
    const header: RequestHeader = { config: prepared.config, ...(system === undefined ? {} : { system }), tools, adapterKind: prepared.provider.kind };
    const last = this.journal.state.header;
    let reason: 'initial' | 'resume' | 'change' | undefined;
    if (!this.headerWritten && this.resumed) reason = 'resume';
    else if (last === undefined) reason = 'initial';
    else if (!headerEquals(last, header)) reason = 'change';
    this.headerWritten = true;
    if (reason !== undefined) await this.append('request/header', { header, reason });
  }
}

function headerEquals(a: RequestHeader, b: RequestHeader): boolean {
  if (!callConfigEquals(a.config, b.config) || a.system !== b.system || a.adapterKind !== b.adapterKind) return false;
  if (a.tools === b.tools) return true;
  return JSON.stringify(a.tools) === JSON.stringify(b.tools);
}

type Decided = { decision: 'allow' | 'deny'; decidedBy: string; reason?: string };

/** The approver's answer as a decision; a promise only when the approver answered with one. */
function decide(approve: RunOptions['approve'], request: ApprovalRequest): Decided | Promise<Decided> {
  if (approve === undefined) return { decision: 'deny', decidedBy: 'no-approver', reason: 'no approver was given, so every tool call is denied' };
  let answer: ApprovalAnswer | PromiseLike<ApprovalAnswer>;
  try {
    answer = approve(request);
  } catch (error) {
    return approverThrew(error);
  }
  if (typeof (answer as PromiseLike<unknown> | null)?.then === 'function') return Promise.resolve(answer).then(decisionOf, approverThrew);
  return decisionOf(answer as ApprovalAnswer);
}

function approverThrew(error: unknown): Decided {
  return { decision: 'deny', decidedBy: 'approver-threw', reason: error instanceof Error ? error.message : String(error) };
}

function decisionOf(answer: ApprovalAnswer): Decided {
  if (answer === 'allow' || answer === 'deny') return { decision: answer, decidedBy: 'approver' };
  if (typeof answer === 'object' && answer !== null && (answer.decision === 'allow' || answer.decision === 'deny')) {
    return { decision: answer.decision, decidedBy: answer.decidedBy ?? 'approver', ...(answer.reason ? { reason: answer.reason } : {}) };
  }
  return { decision: 'deny', decidedBy: 'approver-invalid', reason: `the approver answered ${JSON.stringify(answer)}, not 'allow' or 'deny'` };
}

function toMessages(input: RunInput, newId: (() => string) | undefined): readonly UserMessage[] {
  if (typeof input === 'string') return [createUserMessage(input, newId === undefined ? {} : { id: newId() })];
  if (Array.isArray(input)) return input as readonly UserMessage[];
  return [input as UserMessage];
}

function addUsage(total: TokenUsage, usage: TokenUsage): TokenUsage {
  const sum: { -readonly [K in keyof TokenUsage]: number } = { ...total };
  for (const key of Object.keys(usage) as (keyof TokenUsage)[]) {
    const value = usage[key];
    if (typeof value === 'number') sum[key] = (sum[key] ?? 0) + value;
  }
  return sum;
}

/**
 * The finish of a call whose `llm/stream` middleware threw a programming error. The plugin is named
 * when one plugin has middleware on the hook; otherwise the candidates are listed.
 */
function middlewareFailureChunk(error: unknown, bus: HookBus): StreamChunk {
  const owners = [...new Set(bus.describe().find((hook) => hook.name === 'llm/stream')?.owners ?? [])];
  const failure =
    owners.length === 1
      ? pluginFailure(error, owners[0], 'its llm/stream middleware')
      : pluginFailure(error, undefined, `an llm/stream middleware (of plugin ${owners.map((o) => `"${o}"`).join(', ') || 'unknown'})`);
  return { type: 'finish', finish: { kind: 'error', failure: owners.length === 1 ? failure : { ...failure, plugins: owners } } };
}

function internalFailure(error: unknown): LlmFailure {
  const info = getErrorInfo(error);
  if (HarnessError.is(error)) return error.failure as LlmFailure;
  return llmFailure('UNKNOWN', `Internal error in the agent loop: ${error instanceof Error ? error.message : String(error)}`, { codes: [...info.codes] });
}

export const newSessionId = (): string => randomUUID();

/** The default limit of steps per turn. */
export const DEFAULT_MAX_STEPS = 100;

/**
 * The steps-per-turn rule: undefined → {@link DEFAULT_MAX_STEPS}; a positive number → that limit;
 * 0, a negative number (or `Infinity`) → no limit.
 * @throws HarnessError `INVALID_ARGUMENTS` for a non-integer (NaN, 2.5).
 */
export function resolveMaxSteps(value: number | undefined): number {
  if (value === undefined) return DEFAULT_MAX_STEPS;
  if (value === Infinity || (Number.isInteger(value) && value <= 0)) return Infinity;
  if (!Number.isInteger(value)) throw new HarnessError('INVALID_ARGUMENTS', `maxSteps must be an integer (0 or less: no limit); got ${String(value)}.`, { details: { maxSteps: value } });
  return value;
}

/**
 * What `run()` returns: the channel's events. Hand-written rather than an async
 * generator around `yield* channel` (which adds a hop per event): `next()` is the channel's own
 * (which waits for the turn to close in the journal before it reports the end); `return()` or
 * `throw()` — the consumer stopped reading early — aborts the turn and waits for it to close, as
 * the generator's `finally` did.
 */
class RunIterable implements AsyncIterable<ForwardedEvent> {
  constructor(
    private readonly channel: EventChannel<ForwardedEvent>,
    private readonly controller: AbortController,
    private readonly done: Promise<void>,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<ForwardedEvent> {
    const inner = this.channel[Symbol.asyncIterator]();
    const stop = async (): Promise<void> => {
      this.controller.abort(new HarnessError('ABORTED', 'The consumer stopped reading the run.'));
      await inner.return?.();
      await this.done;
    };
    return {
      next: inner.next,
      return: async (): Promise<IteratorResult<ForwardedEvent>> => {
        await stop();
        return { value: undefined, done: true };
      },
      throw: async (error?: unknown): Promise<IteratorResult<ForwardedEvent>> => {
        await stop();
        throw error;
      },
    };
  }
}
