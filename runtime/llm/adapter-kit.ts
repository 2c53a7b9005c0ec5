/**
 * The adapter kit: the transport pieces every SDK-backed adapter needs and no adapter should write
 * twice — the per-call abort/idle-timeout control, the pump that drives an SDK stream through a
 * parser without an async generator per chunk, a per-route SDK client cache keyed on the API key,
 * and the SDK-neutral part of failure mapping (seed 002 14.3: adapters report failures as
 * `LlmError` codes; the service's boundary turns them into the `finish{error|aborted}` chunk).
 *
 * {@link RoutedSdkAdapter} is the base of an adapter that serves configured routes, each with a
 * model catalog and an API key read from the environment.
 *
 * What stays in each adapter: its SDK's error classes (passed in as {@link SdkErrorClasses}) and the
 * classification of its provider's HTTP errors.
 *
 * Failure mapping ({@link mapSdkFailure}; message text is never inspected here):
 * - our controller aborted: `TIMEOUT` when the idle timer fired, else `ABORTED`; the SDK's user-abort error → `ABORTED`;
 * - the SDK's connection-timeout error → `TIMEOUT`; its connection error (no response) → `TRANSPORT`;
 * - the SDK's API error (HTTP status, or an error event mid-stream) → the adapter's `mapApiError`;
 * - an undici failure thrown from the body (`TypeError('terminated')`, cause `UND_ERR_*` / `ECONN*`) → `TRANSPORT`;
 * - a `SyntaxError` (a stream event that is not JSON) → `MALFORMED_RESPONSE`; a programming error
 *   (`TypeError`, `RangeError`, `ReferenceError` from the parser or adapter) → `PLUGIN_ERROR`
 *   (never retried; the seam adds the plugin's name); anything else → `UNKNOWN`.
 */
import { HarnessError } from '../kernel/errors.ts';
import { LlmAdapter, type AdapterDefaults, type ReplayDegradeReport } from './adapter.ts';
import { LlmError, isProgrammingError, pluginFailure } from './errors.ts';
import { MAX_SYNC_READS, READ_NEXT, type ChunkReader, type ReadError, type ReadResult } from './read-next.ts';
import type { ModelInfo, ProviderInfo, StreamChunk } from './types.ts';

/** Maps a thrown value to the `LlmError` it stands for; `provider` names the route in the message. */
export type SdkErrorMapper = (error: unknown, provider: string) => LlmError;

/** The idle timer checks this many times per `idleMs` (a call times out after `idleMs` to `idleMs · (1 + 1/IDLE_SLICES)` of silence). */
const IDLE_SLICES = 4;

/**
 * One call's cancellation: links the caller's `signal` to an internal controller (whose signal goes
 * to the SDK) and runs the idle timer — the call is aborted when the adapter waited `idleMs` for the
 * provider (the response headers, or the next stream event) and nothing came. The clock only runs
 * between `wait()` and `tick()`, so a slow consumer never times a call out.
 *
 * No clock is read per chunk (the hot path): `wait()` bumps a counter, and a coarse interval timer
 * (every `idleMs / IDLE_SLICES`) counts its checks that found the adapter still waiting with the
 * counter unchanged; `IDLE_SLICES` such checks in a row time the call out — never before `idleMs`
 * of silence, at most a slice after. The timer is unref'd (the open request keeps the process
 * alive) so an abandoned stream cannot hold the process.
 */
export class CallControl {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setInterval> | undefined;
  private waiting = true;
  /** Bumped by every `wait()`: a check that sees it changed knows the provider delivered meanwhile. */
  private waits = 0;
  private seenWaits = 0;
  /** Checks in a row that found the adapter waiting on the same `wait()`. */
  private quietChecks = 0;
  private readonly onUserAbort: (() => void) | undefined;
  /** True once the idle timer aborted the call. */
  timedOut = false;

  /**
   * @param user the caller's signal (`GenerateOptions.signal`).
   * @param idleMs the idle timeout in ms (a route's `idleTimeoutMs`).
   */
  constructor(
    private readonly user: AbortSignal | undefined,
    private readonly idleMs: number,
  ) {
    if (user !== undefined) {
      if (user.aborted) this.controller.abort(user.reason);
      else {
        this.onUserAbort = () => this.controller.abort(user.reason);
        user.addEventListener('abort', this.onUserAbort, { once: true });
      }
    }
    this.timer = setInterval(this.check, Math.max(1, idleMs / IDLE_SLICES));
    this.timer.unref?.();
  }

  /** The signal handed to the SDK. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The caller aborted. */
  get userAborted(): boolean {
    return this.user?.aborted === true;
  }

  /** The adapter starts waiting for the next stream event: the idle clock runs from now. */
  wait(): void {
    this.waiting = true;
    this.waits++;
  }

  /** A stream event arrived: the idle clock stops (a slow consumer is not an idle provider). */
  tick(): void {
    this.waiting = false;
  }

  private readonly check = (): void => {
    if (!this.waiting || this.waits !== this.seenWaits) {
      this.seenWaits = this.waits;
      // Waiting since some time in the last slice: that slice does not count as a whole one.
      this.quietChecks = 0;
      return;
    }
    if (++this.quietChecks < IDLE_SLICES) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.timedOut = true;
    this.controller.abort();
  };

  /**
   * Throws when the SDK's loop ended because of an abort or the idle timer (SDKs end silently then).
   * @throws LlmError `TIMEOUT` or `ABORTED`.
   */
  throwIfStopped(provider: string): void {
    if (this.timedOut) throw idleTimeoutError(provider, this.idleMs);
    if (this.userAborted) throw abortedError(this.user?.reason);
  }

  /** Stops the timer, unlinks the caller's signal and releases the request. */
  dispose(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.onUserAbort !== undefined) this.user!.removeEventListener('abort', this.onUserAbort);
    if (!this.controller.signal.aborted) this.controller.abort();
  }

  /** The `LlmError` a thrown value stands for: an `LlmError` as it is, then timeout/abort, then `map`. */
  toLlmError(error: unknown, provider: string, map: SdkErrorMapper): LlmError {
    if (HarnessError.is(error)) return error as LlmError;
    if (this.timedOut) return idleTimeoutError(provider, this.idleMs);
    if (this.userAborted) return abortedError(this.user?.reason);
    return map(error, provider);
  }
}

/** `TIMEOUT`: the provider sent nothing for `idleMs`. */
export function idleTimeoutError(provider: string, idleMs: number): LlmError {
  return new LlmError('TIMEOUT', `Provider "${provider}" sent nothing for ${idleMs} ms (idleTimeoutMs); the request was cancelled.`, { details: { provider, idleTimeoutMs: idleMs } });
}

/** `ABORTED`, with the abort reason's message when it has one. */
export function abortedError(reason: unknown): LlmError {
  return new LlmError('ABORTED', reason instanceof Error && reason.message ? reason.message : 'The request was aborted.');
}

/** An SDK error class (the SDKs export theirs as static members of the client class). */
type ErrorClass<E extends Error = Error> = abstract new (...args: never[]) => E;

/**
 * The error classes of an SDK built like `openai` and `@anthropic-ai/sdk` (pass the client class:
 * `OpenAI`, `Anthropic`). `APIConnectionError` must be a subclass of `APIError` or not — both work.
 */
export interface SdkErrorClasses<ApiError extends Error> {
  readonly APIUserAbortError: ErrorClass;
  readonly APIConnectionTimeoutError: ErrorClass;
  readonly APIConnectionError: ErrorClass;
  readonly APIError: ErrorClass<ApiError>;
}

/**
 * Maps an SDK or network failure to an `LlmError` (see the module docstring); the SDK's API errors
 * go to `mapApiError`, which knows its provider's status and error codes. An `LlmError` is returned
 * as it is. No abort/timeout context here: {@link CallControl.toLlmError} checks that first.
 * `baseURL`, when given, is named in connection failures (which endpoint could not be reached).
 */
export function mapSdkFailure<ApiError extends Error>(
  error: unknown,
  provider: string,
  sdk: SdkErrorClasses<ApiError>,
  mapApiError: (error: ApiError, provider: string) => LlmError,
  baseURL?: string,
): LlmError {
  const at = baseURL === undefined ? '' : ` at ${baseURL}`;
  if (HarnessError.is(error)) return error as LlmError;
  if (error instanceof sdk.APIUserAbortError) return abortedError(undefined);
  // The connection errors are subclasses of APIError in both SDKs: test them first.
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return new LlmError('TIMEOUT', `Provider "${provider}"${at} did not answer in time.`, { cause: error, details: { provider, ...(baseURL ? { baseURL } : {}) } });
  }
  if (error instanceof sdk.APIConnectionError) {
    return new LlmError('TRANSPORT', `Could not reach provider "${provider}"${at}: ${causeMessage(error)}`, { cause: error, details: { provider, ...(baseURL ? { baseURL } : {}) } });
  }
  if (error instanceof sdk.APIError) return mapApiError(error, provider);
  if (isNetworkFailure(error)) {
    return new LlmError('TRANSPORT', `The connection to provider "${provider}" broke mid-stream: ${causeMessage(error)}`, { cause: error, details: { provider } });
  }
  if (error instanceof SyntaxError) {
    return new LlmError('MALFORMED_RESPONSE', `Provider "${provider}" sent a stream event that is not JSON: ${error.message}`, { cause: error, details: { provider } });
  }
  if (error instanceof Error && error.name === 'AbortError') return abortedError(error);
  if (isProgrammingError(error)) {
    // A TypeError from the parser or the adapter is a bug in the plugin, not the provider's failure.
    const failure = pluginFailure(error, undefined, `the adapter for provider "${provider}"`);
    return new LlmError('PLUGIN_ERROR', failure.message, { cause: error, details: { ...failure, provider } });
  }
  return new LlmError('UNKNOWN', `Provider "${provider}" call failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error, details: { provider } });
}

/**
 * The provider's requested wait: `retry-after-ms` (ms), else `retry-after` (seconds, or an HTTP
 * date), in ms; undefined when absent or unreadable.
 */
export function retryAfterMsOf(headers: { get(name: string): string | null }): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
  }
  const raw = headers.get('retry-after');
  if (raw === null || raw.trim() === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** True for a connection that broke under a response body (undici) or a socket error. */
export function isNetworkFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const cause = (error as { cause?: { code?: unknown } }).cause;
  const code = typeof cause?.code === 'string' ? cause.code : (error as { code?: unknown }).code;
  if (typeof code === 'string' && (code.startsWith('UND_ERR') || code.startsWith('ECONN') || code === 'EPIPE' || code === 'ETIMEDOUT')) return true;
  // undici's body-read failure has no code of its own (only its cause has one).
  return error instanceof TypeError && (error.message === 'terminated' || error.message === 'fetch failed');
}

function causeMessage(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) return `${(error as Error).message} (${cause.message})`;
  return error instanceof Error ? error.message : String(error);
}

/** What a {@link ClientCache} needs to know of a route. */
export interface KeyedRoute {
  /** The provider id (the route). */
  readonly provider: string;
  /** The environment variable holding the API key; false for a keyless server (the client gets an empty key). */
  readonly apiKeyEnv: string | false;
}

/**
 * One SDK client per route, made on first use and rebuilt when the key in the environment changes
 * (a key rotated in a live process takes effect on the next call).
 */
export class ClientCache<Route extends KeyedRoute, Client> {
  private readonly clients = new Map<string, { key: string; client: Client }>();

  /** @param create makes a client for a route and its key (with the SDK's own retries off). */
  constructor(private readonly create: (route: Route, apiKey: string) => Client) {}

  /** @throws LlmError `AUTH` naming the variable when the route's API key variable is unset or empty. */
  get(route: Route): Client {
    const key = route.apiKeyEnv === false ? '' : process.env[route.apiKeyEnv];
    if (route.apiKeyEnv !== false && (key === undefined || key.trim() === '')) {
      throw new LlmError('AUTH', `No API key for provider "${route.provider}": set the environment variable ${route.apiKeyEnv}.`, {
        details: { provider: route.provider, apiKeyEnv: route.apiKeyEnv },
      });
    }
    const cached = this.clients.get(route.provider);
    if (cached !== undefined && cached.key === key) return cached.client;
    const client = this.create(route, key!);
    this.clients.set(route.provider, { key: key!, client });
    return client;
  }
}

/** What a stream parser offers the pump: `push` appends chunks to `out`; `finish` appends the last ones or throws. */
export interface StreamParser<Event> {
  readonly out: StreamChunk[];
  push(event: Event): void;
  finish(): void;
}

/** What a {@link StreamPump} drives. */
export interface StreamPumpOptions<Event> {
  /** The provider id (for error messages). */
  readonly provider: string;
  /** The caller's signal. */
  readonly signal: AbortSignal | undefined;
  /** Idle timeout in ms (see {@link CallControl}). */
  readonly idleMs: number;
  /** Starts the request with the call's signal; resolves to the SDK's async iterable of events. */
  readonly open: (signal: AbortSignal) => Promise<unknown>;
  /** Turns events into chunks. */
  readonly parser: StreamParser<Event>;
  /** Maps what the SDK throws (see {@link mapSdkFailure}). */
  readonly mapError: SdkErrorMapper;
}

/**
 * Drives one SDK stream through a parser as an `AsyncIterator<StreamChunk>`, without an async
 * generator per chunk (the hot path: one promise per chunk). The request starts at the first `next()`;
 * the idle timer runs from then on. Failures are thrown as `LlmError` (see `CallControl.toLlmError`);
 * `return()` (the consumer stopped) releases the request.
 */
export class StreamPump<Event> implements AsyncIterableIterator<StreamChunk>, ChunkReader {
  private control: CallControl | undefined;
  /** The callbacks of the `[READ_NEXT]` in flight (one read at a time, as with `next()`). */
  private readResult: ReadResult | undefined;
  private readError: ReadError | undefined;
  /** Nested synchronous `[READ_NEXT]` hand-offs of buffered chunks. */
  private syncReads = 0;
  private iterator: AsyncIterator<Event> | undefined;
  private pos = 0;
  private done = false;
  private readonly provider: string;
  private readonly signal: AbortSignal | undefined;
  private readonly idleMs: number;
  private readonly open: (signal: AbortSignal) => Promise<unknown>;
  private readonly parser: StreamParser<Event>;
  private readonly mapError: SdkErrorMapper;

  constructor(options: StreamPumpOptions<Event>) {
    this.provider = options.provider;
    this.signal = options.signal;
    this.idleMs = options.idleMs;
    this.open = options.open;
    this.parser = options.parser;
    this.mapError = options.mapError;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<StreamChunk>> {
    const out = this.parser.out;
    if (this.pos < out.length) return Promise.resolve({ value: out[this.pos++]!, done: false });
    // The steady state (the request is open, nothing buffered): one SDK step and then `onStep`,
    // with no async function frame per event; the start, the end and failures take `step()`.
    if (this.iterator === undefined || this.done) return this.step();
    if (this.pos !== 0) {
      // Mostly one chunk per event: pop() is inlined where setting length is a runtime call.
      if (out.length === 1) out.pop();
      else out.length = 0;
      this.pos = 0;
    }
    this.control!.wait();
    let step: Promise<IteratorResult<Event>>;
    try {
      step = Promise.resolve(this.iterator.next());
    } catch (error) {
      step = Promise.reject(error);
    }
    return step.then(this.onStep, this.onError);
  }

  /**
   * `next()` without its promise (see runtime/llm/read-next.ts): a chunk already parsed is handed
   * over at once (up to MAX_SYNC_READS nested), an SDK event through one continuation.
   */
  [READ_NEXT](onResult: ReadResult, onError: ReadError): void {
    const out = this.parser.out;
    if (this.pos < out.length) {
      const result: IteratorResult<StreamChunk> = { value: out[this.pos++]!, done: false };
      if (this.syncReads >= MAX_SYNC_READS) {
        void Promise.resolve(result).then(onResult);
        return;
      }
      this.syncReads++;
      try {
        onResult(result);
      } finally {
        this.syncReads--;
      }
      return;
    }
    if (this.iterator === undefined || this.done) {
      this.step().then(onResult, onError);
      return;
    }
    if (this.pos !== 0) {
      if (out.length === 1) out.pop();
      else out.length = 0;
      this.pos = 0;
    }
    this.control!.wait();
    let step: Promise<IteratorResult<Event>>;
    try {
      step = Promise.resolve(this.iterator.next());
    } catch (error) {
      step = Promise.reject(error);
    }
    this.readResult = onResult;
    this.readError = onError;
    void step.then(this.onReadStep, this.onReadFailure);
  }

  private readonly onReadStep = (step: IteratorResult<Event>): void => {
    const onResult = this.readResult!;
    const onError = this.readError!;
    let result: IteratorResult<StreamChunk> | Promise<IteratorResult<StreamChunk>>;
    try {
      result = this.onStep(step);
    } catch (error) {
      onError(error);
      return;
    }
    if (result instanceof Promise) result.then(onResult, onError);
    else onResult(result);
  };

  private readonly onReadFailure = (error: unknown): void => {
    const onError = this.readError!;
    let mapped: unknown;
    try {
      this.onError(error);
    } catch (thrown) {
      mapped = thrown;
    }
    onError(mapped);
  };

  /** An SDK event arrived on the fast path: parse it and hand out its first chunk (or read on). */
  private readonly onStep = (step: IteratorResult<Event>): IteratorResult<StreamChunk> | Promise<IteratorResult<StreamChunk>> => {
    if (step.done === true) return this.step(step);
    const out = this.parser.out;
    try {
      this.control!.tick();
      this.parser.push(step.value);
    } catch (error) {
      return this.onError(error);
    }
    if (this.pos < out.length) return { value: out[this.pos++]!, done: false };
    return this.step(); // an event without chunks (a ping, a usage-less delta)
  };

  private readonly onError = (error: unknown): never => {
    this.done = true;
    this.parser.out.length = 0;
    const control = this.control!;
    control.dispose();
    throw control.toLlmError(error, this.provider, this.mapError);
  };

  /** The general step: opens the request, reads until a chunk (or the end), maps failures. `first`: an SDK step already read. */
  private async step(first?: IteratorResult<Event>): Promise<IteratorResult<StreamChunk>> {
    const out = this.parser.out;
    let pending = first;
    for (;;) {
      if (this.pos < out.length) return { value: out[this.pos++]!, done: false };
      if (this.done) return { value: undefined, done: true };
      if (this.pos !== 0) {
        // Mostly one chunk per event: pop() is inlined where setting length is a runtime call.
        if (out.length === 1) out.pop();
        else out.length = 0;
        this.pos = 0;
      }
      this.control ??= new CallControl(this.signal, this.idleMs);
      const control = this.control;
      try {
        control.wait();
        if (this.iterator === undefined) this.iterator = ((await this.open(control.signal)) as AsyncIterable<Event>)[Symbol.asyncIterator]();
        const step = pending ?? (await this.iterator.next());
        pending = undefined;
        if (step.done === true) {
          this.done = true;
          control.throwIfStopped(this.provider);
          this.parser.finish();
          control.dispose();
          continue;
        }
        control.tick();
        this.parser.push(step.value);
      } catch (error) {
        this.done = true;
        out.length = 0;
        control.dispose();
        throw control.toLlmError(error, this.provider, this.mapError);
      }
    }
  }

  async return(): Promise<IteratorResult<StreamChunk>> {
    this.done = true;
    this.control?.dispose();
    try {
      await this.iterator?.return?.();
    } catch {
      // the request is being torn down anyway
    }
    return { value: undefined, done: true };
  }
}

/** A configured route of a {@link RoutedSdkAdapter}: its catalog and key. */
export interface CatalogRoute<Model extends ModelInfo = ModelInfo> extends KeyedRoute {
  /** Human-readable name of the provider. */
  readonly label: string;
  /** Resolve any model id (as `{ id }`) instead of `UNKNOWN_MODEL` (gateways). */
  readonly allowUnknownModels: boolean;
  readonly defaults?: AdapterDefaults;
  readonly models: readonly Model[];
  readonly modelsById: ReadonlyMap<string, Model>;
}

/**
 * Base of an SDK-backed adapter serving a set of configured routes: route lookup, the catalog
 * methods of `LlmAdapter` (exact model lookup), the per-route client with the API-key `preflight`,
 * and the replay-degrade bookkeeping. A subclass gives `kind`, `createClient` and `stream`.
 */
export abstract class RoutedSdkAdapter<Route extends CatalogRoute, Client> extends LlmAdapter {
  protected readonly routes: ReadonlyMap<string, Route>;
  protected readonly clients: ClientCache<Route, Client>;
  /** How many times the seam dropped a message's replay state before a request to this adapter. */
  degradeCount = 0;
  /** The last such report. */
  lastDegrade: ReplayDegradeReport | undefined;

  /** The adapter's kind (`ProviderInfo.kind`, and its name in errors). */
  protected abstract readonly kind: string;

  /** @param createClient makes the SDK client of a route with its key (the SDK's own retries off). */
  constructor(routes: readonly Route[], createClient: (route: Route, apiKey: string) => Client) {
    super();
    this.routes = new Map(routes.map((route) => [route.provider, route]));
    this.clients = new ClientCache(createClient);
  }

  /** @throws LlmError `NO_ADAPTER` for a provider this adapter does not serve. */
  protected route(provider: string): Route {
    const route = this.routes.get(provider);
    if (route === undefined) throw new LlmError('NO_ADAPTER', `The ${this.kind} adapter does not serve provider "${provider}".`, { details: { provider } });
    return route;
  }

  override providerInfo(provider: string): ProviderInfo {
    return { provider, kind: this.kind, label: this.routes.get(provider)?.label ?? provider };
  }

  override listModels(provider: string): readonly ModelInfo[] {
    return this.routes.get(provider)?.models ?? [];
  }

  /** Exact lookup; with `allowUnknownModels`, an unlisted id resolves to `{ id }`. */
  override resolveModel(provider: string, model: string): ModelInfo | undefined {
    const route = this.routes.get(provider);
    if (route === undefined) return undefined;
    return route.modelsById.get(model) ?? (route.allowUnknownModels ? { id: model } : undefined);
  }

  override defaults(provider: string): AdapterDefaults | undefined {
    return this.routes.get(provider)?.defaults;
  }

  /** @throws LlmError `AUTH` naming the variable when the route's API key is not set (no request is made). */
  override preflight(provider: string): void {
    this.clients.get(this.route(provider));
  }

  override onReplayDegrade(report: ReplayDegradeReport): void {
    this.degradeCount++;
    this.lastDegrade = report;
  }
}
