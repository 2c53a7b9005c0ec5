/**
 * `ctx.llm` (seed 002 14.3, DESIGN "ctx.llm"): adapter registration, `prepareCall`, and the
 * `llm/stream` waterfall with its failure boundary and replay-state read discipline.
 */
import type { EmitHook, HookBus, WaterfallHook } from '../kernel/bus.ts';
import type { Kernel } from '../kernel/context.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import type { Scope } from '../kernel/fiber.ts';
import type { AdapterDefaults, LlmAdapter, ReplayDegradeReport } from './adapter.ts';
import { callConfigEquals, isAgentLoopRequest, markAgentLoopRequest, pickCallConfig, resolveRetryPolicy, type ResolvedRetryPolicy, type RetryPolicyConfig } from './call-config.ts';
import { LlmError, llmFailure } from './errors.ts';
import { BoundaryStream } from './boundary.ts';
import { sharedPrefixLength } from './prefix.ts';
import { AdapterRegistry, type AdapterRegistration, type AdapterRegistrationHandle, type AdaptersUpdatedEvent, type RouteInfo } from './registry.ts';
import { OBSERVE_REQUEST, type AssistantMessage, type GenerateOptions, type LlmCallConfig, type Message, type ModelInfo, type ProviderInfo, type ReplayEnvelope, type StreamChunk } from './types.ts';

/**
 * Serves the streams of every route in place of its adapter (see {@link LlmService.replaceModel}):
 * `route` is the adapter the call was routed to.
 */
export interface ModelStandIn {
  stream(request: GenerateOptions, route: { readonly provider: string; readonly adapter: LlmAdapter; readonly kind: string }): AsyncIterable<StreamChunk>;
}

declare module '../kernel/bus.ts' {
  interface HookMap {
    /** The model call (seed 002 14.3): wrap, replace or veto the stream. */
    'llm/stream': WaterfallHook<GenerateOptions, AsyncIterable<StreamChunk>>;
    /** The route table changed: emitted once after each synchronous section of changes (a microtask later). */
    'llm/adapters-updated': EmitHook<AdaptersUpdatedEvent>;
  }
}

/**
 * A call frozen by {@link LlmService.prepareCall}: config, model metadata, defaults and retry policy,
 * all resolved from one route registration, which it keeps even if the route is replaced later.
 */
export interface PreparedCall {
  readonly config: LlmCallConfig;
  readonly model: ModelInfo;
  readonly provider: ProviderInfo;
  readonly defaults: AdapterDefaults;
  readonly retryPolicy: ResolvedRetryPolicy;
  /** The route registration the call is bound to (changes when a reload re-registers the route). */
  readonly registrationId: number;
  /**
   * Streams the call once through `llm/stream`. `options` must carry the same call config.
   * @throws LlmError `INVALID_PREPARED_CALL` on a second call or a different config.
   */
  stream(options: GenerateOptions): AsyncIterable<StreamChunk>;
}

/** Options of `ctx.llm.prepareCall(config, options)`. */
export interface PrepareOptions {
  /** A retry-policy layer over the provider's own (e.g. from the harness config). */
  retryPolicy?: RetryPolicyConfig;
}

/** The scoped `ctx.llm` a plugin receives. */
export interface LlmContext {
  /**
   * Routes `providers` to `adapter` — atomically, as an effect of the calling plugin.
   * @throws LlmError `INVALID_ROUTE`, `DUPLICATE_ADAPTER` (nothing changes).
   */
  registerAdapter(providers: readonly string[], adapter: LlmAdapter): AdapterRegistrationHandle;
  prepareCall(config: LlmCallConfig, options?: PrepareOptions): Promise<PreparedCall>;
  /** Dispatches `llm/stream`. Adapter failures arrive as one terminal `finish{error|aborted}`. */
  stream(options: GenerateOptions): AsyncIterable<StreamChunk>;
  routes(): readonly RouteInfo[];
  hasRoute(provider: string): boolean;
  /** The model catalog of one route (empty when the adapter has none). */
  listModels(provider: string): Promise<readonly ModelInfo[]>;
}

declare module '../kernel/context.ts' {
  interface PluginContext {
    readonly llm: LlmContext;
  }
}

/** Whether a message's replay state may go to one route (provider and model of an adapter), and the copy sent without it. */
interface ReplayVerdict {
  readonly route: string;
  readonly problem: { reason: ReplayDegradeReport['reason']; detail: string } | undefined;
  stripped?: Message;
}

/** The replay discipline's last request of one conversation on one route: see `applyReplayDiscipline`. */
interface DisciplineMemo {
  readonly messages: readonly Message[];
  /** How many of `messages` its verdicts hold for: up to the first one that was not frozen. */
  readonly checked: number;
  /** Where the replay state was dropped: index and the copy sent instead. */
  readonly replaced: readonly (readonly [number, Message])[];
}

interface Binding {
  readonly registration: AdapterRegistration;
  readonly provider: string;
}

export class LlmService {
  readonly registry: AdapterRegistry;
  private readonly bus: HookBus;
  private readonly degraded = new WeakMap<Message, Set<string>>();
  /**
   * The replay discipline's verdicts, per adapter (a reloaded generation's go with it): per frozen
   * message its last verdict, and per conversation (its first message) and route the last request
   * (see `applyReplayDiscipline`).
   */
  private readonly verdicts = new WeakMap<LlmAdapter, WeakMap<Message, ReplayVerdict>>();
  private readonly disciplined = new WeakMap<LlmAdapter, WeakMap<Message, Map<string, DisciplineMemo>>>();
  private standIn: ModelStandIn | undefined;

  constructor(kernel: Kernel, options: { drainTimeoutMs?: number } = {}) {
    this.bus = kernel.bus;
    this.bus.declare('llm/stream', 'waterfall');
    this.bus.declare('llm/adapters-updated', 'emit');
    this.registry = new AdapterRegistry(this.bus, options.drainTimeoutMs);
    kernel.extend((scope, owner) => ({ llm: this.contextFor(scope, owner) }));
  }

  contextFor(scope: Scope, owner: string): LlmContext {
    return {
      registerAdapter: (providers, adapter) => this.registry.create(providers, adapter, owner, (registration) => scope.register(registration)),
      prepareCall: (config, options) => this.prepareCall(config, options),
      stream: (options) => this.stream(options),
      routes: () => this.registry.list(),
      hasRoute: (provider) => this.registry.lookup(provider) !== undefined,
      listModels: (provider) => this.listModels(provider),
    };
  }

  /**
   * Resolves a call from one route registration: exact model lookup, reasoning-effort check,
   * adapter defaults and retry policy; all frozen.
   * @throws LlmError `NO_ADAPTER`, `UNKNOWN_MODEL`, `UNSUPPORTED_REASONING_EFFORT`, or what the adapter's `preflight` throws (`AUTH`).
   */
  async prepareCall(input: LlmCallConfig, options: PrepareOptions = {}): Promise<PreparedCall> {
    const registration = this.requireRoute(input.provider);
    const adapter = registration.adapter;
    const provider = input.provider;
    const model = await this.resolveModel(adapter, provider, input.model);
    if (this.standIn === undefined) await adapter.preflight?.(provider, model);
    const defaults = deepFreeze({ ...(adapter.defaults?.(provider) ?? {}) });
    // A provider-wide default effort applies only to models that accept it; an explicit one is checked below.
    const defaultEffort = defaults.reasoningEffort !== undefined && model.reasoningEfforts?.includes(defaults.reasoningEffort) ? defaults.reasoningEffort : undefined;
    const config = pickCallConfig({
      ...input,
      reasoningEffort: input.reasoningEffort ?? defaultEffort ?? model.defaultReasoningEffort,
      temperature: input.temperature ?? defaults.temperature,
      maxTokens: input.maxTokens ?? defaults.maxTokens,
    });
    if (config.reasoningEffort !== undefined && !(model.reasoningEfforts ?? []).includes(config.reasoningEffort)) {
      const accepted = model.reasoningEfforts?.length ? `It accepts: ${model.reasoningEfforts.join(', ')}.` : 'It takes no reasoning effort.';
      throw new LlmError('UNSUPPORTED_REASONING_EFFORT', `Model "${model.id}" on provider "${provider}" does not support reasoning effort "${config.reasoningEffort}". ${accepted}`, {
        details: { provider, model: model.id, reasoningEffort: config.reasoningEffort },
      });
    }
    const retryPolicy = resolveRetryPolicy(adapter.providerRetryPolicy?.(provider), options.retryPolicy);
    const providerInfo = deepFreeze(adapter.providerInfo?.(provider) ?? { provider, kind: registration.kind });
    const binding: Binding = { registration, provider };
    let used = false;
    const service = this;
    return Object.freeze({
      config,
      model,
      provider: providerInfo,
      defaults,
      retryPolicy,
      registrationId: registration.id,
      stream(streamOptions: GenerateOptions): AsyncIterable<StreamChunk> {
        if (used) throw new LlmError('INVALID_PREPARED_CALL', 'A prepared call streams once; prepare a new call to try again.');
        if (!callConfigEquals(config, streamOptions)) {
          throw new LlmError(
            'INVALID_PREPARED_CALL',
            `A prepared call must be streamed with the config it was prepared with (${describeConfig(config)}), got ${describeConfig(pickCallConfig(streamOptions))}.`,
          );
        }
        used = true;
        return service.dispatch(streamOptions, binding);
      },
    });
  }

  /**
   * Replaces the model and nothing else (a cassette re-run): every adapter stream is served by
   * `standIn` at the innermost position, after every `llm/stream` middleware and the replay
   * discipline. Routes, model lookup, defaults, retry policies and replay formats stay the
   * registered adapters'; `preflight` is skipped (no key is needed). Returns the undo.
   * @throws HarnessError `MODEL_REPLACED` when a stand-in is already installed.
   */
  replaceModel(standIn: ModelStandIn): () => void {
    if (this.standIn !== undefined) throw new LlmError('MODEL_REPLACED', 'The model of this harness is already replaced by a stand-in; undo that first.');
    this.standIn = standIn;
    return () => {
      if (this.standIn === standIn) this.standIn = undefined;
    };
  }

  /** Dispatches `llm/stream`; the route is chosen at the innermost step (after middleware). */
  stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    return this.dispatch(options, undefined);
  }

  async listModels(provider: string): Promise<readonly ModelInfo[]> {
    const registration = this.requireRoute(provider);
    return deepFreeze([...((await registration.adapter.listModels?.(provider)) ?? [])]);
  }

  private dispatch(options: GenerateOptions, binding: Binding | undefined): AsyncIterable<StreamChunk> {
    return this.bus.waterfall('llm/stream', options, (final) => new BoundaryStream(this, final, binding));
  }

  /**
   * Starts the adapter stream for the innermost step: route, abort check, replay discipline,
   * `enter()` and `adapter.stream()`. Throws what fails (the boundary turns it into a finish chunk);
   * `exit` is set as soon as the registration was entered.
   * @internal
   */
  openAdapterStream(options: GenerateOptions, binding: Binding | undefined, entered: (exit: () => void, track: boolean, owner: string) => void): AsyncIterator<StreamChunk> {
    const signal = options.signal;
    const registration = binding !== undefined && binding.provider === options.provider ? binding.registration : this.requireRoute(options.provider);
    if (signal?.aborted) throw signal.reason ?? new LlmError('ABORTED', 'The request was aborted before it started.');
    const request = this.applyReplayDiscipline(options, registration);
    const observe = request[OBSERVE_REQUEST];
    if (observe !== undefined) {
      try {
        observe(request);
      } catch (error) {
        this.bus.report({ level: 'error', code: 'OBSERVER_FAILED', source: 'llm', message: `A request observer threw: ${String(error)}`, error });
      }
    }
    const standIn = this.standIn;
    // Digests only of an adapter's own output (a stand-in replays chunks that carry theirs).
    entered(registration.enter(), standIn === undefined && registration.adapter.replayFormat !== undefined, registration.owner);
    if (standIn !== undefined) return standIn.stream(request, { provider: options.provider, adapter: registration.adapter, kind: registration.kind })[Symbol.asyncIterator]();
    return registration.adapter.stream(request)[Symbol.asyncIterator]();
  }

  /**
   * Replay-state read discipline: stored content is authoritative; replay state the target adapter
   * cannot use is dropped from that message only and reported (once per message and provider).
   *
   * A request carries the whole history, and reading every message of it per call made a long
   * session's turns slower and slower (each message is a separate heap object: ~100-200 ns a read
   * on a busy machine, ~1 ms per call at 3,000 turns). So the discipline remembers, per adapter,
   * route and conversation (its first message), the last request's messages: a request that
   * starts with the very same frozen objects takes their verdicts after one pointer comparison
   * each, and reads only the messages after them.
   */
  private applyReplayDiscipline(options: GenerateOptions, registration: AdapterRegistration): GenerateOptions {
    const messages = options.messages;
    const adapter = registration.adapter;
    const { provider, model } = options;
    const route = `${provider}\u0000${model}`;
    const first = messages[0];
    let memos = this.disciplined.get(adapter);
    if (memos === undefined) {
      memos = new WeakMap();
      this.disciplined.set(adapter, memos);
    }
    const memo = first !== undefined && Object.isFrozen(first) ? memos.get(first)?.get(route) : undefined;
    let from = 0;
    let replaced: (readonly [number, Message])[] = [];
    if (memo !== undefined) {
      from = Math.min(memo.checked, sharedPrefixLength(memo.messages, messages));
      replaced = memo.replaced.filter(([index]) => index < from);
    }
    let verdicts = this.verdicts.get(adapter);
    if (verdicts === undefined) {
      verdicts = new WeakMap();
      this.verdicts.set(adapter, verdicts);
    }
    let checked = -1;
    for (let i = from; i < messages.length; i++) {
      const message = messages[i]!;
      const frozen = Object.isFrozen(message) && Object.isFrozen(message.source);
      if (!frozen && checked < 0) checked = i;
      if (message.source.kind !== 'model' || message.source.replayState === undefined) continue;
      let verdict = verdicts.get(message);
      if (verdict === undefined || verdict.route !== route) {
        verdict = { route, problem: this.replayProblem(message as AssistantMessage, provider, model, adapter) };
        if (frozen) verdicts.set(message, verdict);
      }
      if (verdict.problem === undefined) continue;
      if (verdict.stripped === undefined) {
        const { replayState: _dropped, ...source } = message.source;
        verdict.stripped = deepFreeze({ ...message, source });
      }
      replaced.push([i, verdict.stripped]);
      this.reportDegrade(message as AssistantMessage, verdict.problem, options, registration);
    }
    if (first !== undefined && Object.isFrozen(first)) {
      let routes = memos.get(first);
      if (routes === undefined) {
        routes = new Map();
        memos.set(first, routes);
      }
      // A list that is not frozen may change in place: the memo keeps its own copy of it.
      routes.set(route, { messages: Object.isFrozen(messages) ? messages : messages.slice(), checked: checked < 0 ? messages.length : checked, replaced });
    }
    if (replaced.length === 0) return options;
    const out = messages.slice();
    for (const [index, message] of replaced) out[index] = message;
    const copy: GenerateOptions = { ...options, messages: out };
    return isAgentLoopRequest(options) ? markAgentLoopRequest(copy) : copy;
  }

  private replayProblem(message: AssistantMessage, provider: string, model: string, adapter: LlmAdapter): { reason: ReplayDegradeReport['reason']; detail: string } | undefined {
    const envelope = message.source.replayState as unknown as ReplayEnvelope | null;
    if (message.source.provider !== provider) return { reason: 'other-provider', detail: `it was made by provider "${message.source.provider}"` };
    // Signed/encrypted state is valid only for the model that made it (a thinking signature of one
    // model is rejected by another on the same route): seed 002 14.3 read-side discipline.
    if (message.source.model !== model) return { reason: 'other-model', detail: `it was made by model "${message.source.model}", this request is for "${model}"` };
    // Journals are JSON: a `null` or otherwise broken envelope must degrade, not fail every request.
    if (typeof envelope !== 'object' || envelope === null) return { reason: 'malformed', detail: 'it is not an object' };
    const format = adapter.replayFormat;
    const response = envelope.response as { kind?: unknown; version?: unknown } | null;
    if (format === undefined) return { reason: 'other-kind', detail: 'the adapter reads no replay state' };
    if (typeof response !== 'object' || response === null) return { reason: 'malformed', detail: 'its response part is not an object' };
    if (response.kind !== format.kind) return { reason: 'other-kind', detail: `it is of kind "${String(response.kind)}", the adapter reads "${format.kind}"` };
    if (response.version !== format.version) return { reason: 'other-version', detail: `it is version ${String(response.version)}, the adapter reads ${format.version}` };
    if (envelope.blocks !== undefined && (!Array.isArray(envelope.blocks) || envelope.blocks.length !== message.content.length)) {
      return { reason: 'misaligned', detail: `it has ${Array.isArray(envelope.blocks) ? envelope.blocks.length : 'no'} block entries for ${message.content.length} blocks` };
    }
    let malformed: string | undefined;
    try {
      malformed = adapter.validateReplayState?.(envelope, message);
    } catch (error) {
      malformed = `the adapter's validateReplayState threw: ${error instanceof Error ? error.message : String(error)}`;
    }
    return malformed === undefined ? undefined : { reason: 'malformed', detail: malformed };
  }

  private reportDegrade(message: AssistantMessage, problem: { reason: ReplayDegradeReport['reason']; detail: string }, options: GenerateOptions, registration: AdapterRegistration): void {
    let seen = this.degraded.get(message);
    if (seen === undefined) {
      seen = new Set();
      this.degraded.set(message, seen);
    }
    const key = `${options.provider}\u0000${problem.reason}`;
    if (seen.has(key)) return;
    seen.add(key);
    const text = `Replay state of message ${message.id} was not sent to provider "${options.provider}": ${problem.detail}. The message goes as plain content.`;
    const report: ReplayDegradeReport = deepFreeze({
      provider: options.provider,
      model: options.model,
      messageId: message.id,
      reason: problem.reason,
      failure: llmFailure('INVALID_REPLAY_STATE', text, { messageId: message.id, reason: problem.reason }),
    });
    try {
      registration.adapter.onReplayDegrade?.(report);
    } catch (error) {
      this.bus.report({ level: 'error', code: 'OBSERVER_FAILED', source: `adapter:${options.provider}`, message: `onReplayDegrade threw: ${String(error)}`, error });
    }
    this.bus.report({ level: 'warning', code: 'INVALID_REPLAY_STATE', source: `llm:${options.provider}`, message: text });
  }

  private requireRoute(provider: string): AdapterRegistration {
    const registration = this.registry.lookup(provider);
    if (registration === undefined) {
      const known = this.registry.providers();
      throw new LlmError('NO_ADAPTER', `No adapter serves provider "${provider}". ${known.length ? `Known providers: ${known.join(', ')}.` : 'No provider is registered: load an adapter plugin.'}`, {
        details: { provider },
      });
    }
    return registration;
  }

  private async resolveModel(adapter: LlmAdapter, provider: string, modelId: string): Promise<ModelInfo> {
    if (adapter.resolveModel !== undefined) {
      const found = await adapter.resolveModel(provider, modelId);
      if (found === undefined) throw await this.unknownModel(adapter, provider, modelId);
      return deepFreeze({ ...found });
    }
    if (adapter.listModels !== undefined) {
      const found = (await adapter.listModels(provider)).find((model) => model.id === modelId);
      if (found === undefined) throw await this.unknownModel(adapter, provider, modelId);
      return deepFreeze({ ...found });
    }
    return deepFreeze({ id: modelId });
  }

  private async unknownModel(adapter: LlmAdapter, provider: string, modelId: string): Promise<LlmError> {
    let known: string[] = [];
    try {
      known = ((await adapter.listModels?.(provider)) ?? []).map((model) => model.id);
    } catch {
      // listing is only for the message
    }
    return new LlmError(
      'UNKNOWN_MODEL',
      `Provider "${provider}" has no model "${modelId}".${known.length ? ` Known models: ${known.join(', ')}.` : ''} Use one of those, or add it to the models of the provider's route (its adapter plugin's entry in harness.config.ts).`,
      {
        details: { provider, model: modelId },
      },
    );
  }
}

function describeConfig(config: LlmCallConfig): string {
  return JSON.stringify(config);
}
