/**
 * Transport helpers of the OpenAI plugin: the per-call abort/idle-timeout control, the lazily created
 * SDK client per route, and the mapping of SDK / HTTP failures to `LlmError` codes.
 *
 * Error mapping (status and provider codes only; message text is never inspected):
 * - `APIUserAbortError`, or our own controller aborted: `TIMEOUT` when the idle timer fired, else `ABORTED`.
 * - `APIConnectionTimeoutError` → `TIMEOUT`; `APIConnectionError` (no headers) → `TRANSPORT`.
 * - An undici failure thrown from the body (`TypeError('terminated')`, cause `UND_ERR_*` / `ECONN*`) → `TRANSPORT`.
 * - `APIError` (HTTP status, or a mid-stream `error` object with no status): see {@link classifyProviderError}.
 * - A `SyntaxError` (a data frame that is not JSON) → `MALFORMED_RESPONSE`; anything else → `UNKNOWN`.
 *
 * Failures carry `details: { status?, providerCode?, providerType?, providerRetryAfterMs?, provider }`.
 */
import OpenAI from 'openai';
import { HarnessError, LlmError, type LlmErrorCode, type StreamChunk } from '../../runtime/index.ts';
import type { OpenAIRoute } from './config.ts';

/**
 * One call's cancellation: links the caller's `signal` to an internal controller (whose signal goes
 * to the SDK) and runs the idle timer — the call is aborted when the adapter waited `idleMs` for the
 * provider (the response headers, or the next SSE event) and nothing came. The clock only runs
 * between `wait()` and `tick()`, so a slow consumer never times a call out. The timer is unref'd (the
 * open request keeps the process alive) so an abandoned stream cannot hold the process.
 */
export class CallControl {
  private readonly controller = new AbortController();
  private last = performance.now();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private waiting = true;
  private readonly onUserAbort: (() => void) | undefined;
  /** True once the idle timer aborted the call. */
  timedOut = false;

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
    this.timer = setTimeout(this.check, idleMs);
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

  /** The adapter starts waiting for the next SSE event: the idle clock runs from now. */
  wait(): void {
    this.waiting = true;
    this.last = performance.now();
  }

  /** An SSE event arrived: the idle clock stops (a slow consumer is not an idle provider). */
  tick(): void {
    this.waiting = false;
  }

  private readonly check = (): void => {
    if (!this.waiting) {
      this.timer = setTimeout(this.check, this.idleMs);
      this.timer.unref?.();
      return;
    }
    const idle = performance.now() - this.last;
    if (idle + 1 >= this.idleMs) {
      this.timer = undefined;
      this.timedOut = true;
      this.controller.abort();
      return;
    }
    this.timer = setTimeout(this.check, this.idleMs - idle);
    this.timer.unref?.();
  };

  /** Throws when the loop ended because of an abort or the idle timer (the SDKs end silently then). */
  throwIfStopped(provider: string): void {
    if (this.timedOut) throw timeoutError(provider, this.idleMs);
    if (this.userAborted) throw abortedError(this.user?.reason);
  }

  /** Stops the timer, unlinks the caller's signal and releases the request. */
  dispose(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.onUserAbort !== undefined) this.user!.removeEventListener('abort', this.onUserAbort);
    if (!this.controller.signal.aborted) this.controller.abort();
  }

  /** The `LlmError` a thrown value stands for (see the module docstring). */
  toLlmError(error: unknown, provider: string): LlmError {
    if (HarnessError.is(error)) return error as LlmError;
    if (this.timedOut) return timeoutError(provider, this.idleMs);
    if (this.userAborted) return abortedError(this.user?.reason);
    return mapSdkError(error, provider);
  }
}

function timeoutError(provider: string, idleMs: number): LlmError {
  return new LlmError('TIMEOUT', `Provider "${provider}" sent nothing for ${idleMs} ms (idleTimeoutMs); the request was cancelled.`, { details: { provider, idleTimeoutMs: idleMs } });
}

function abortedError(reason: unknown): LlmError {
  const message = reason instanceof Error && reason.message ? reason.message : 'The request was aborted.';
  return new LlmError('ABORTED', message);
}

/** Maps an SDK or network failure to an `LlmError` (no abort/timeout context: see `CallControl.toLlmError`). */
export function mapSdkError(error: unknown, provider: string): LlmError {
  if (HarnessError.is(error)) return error as LlmError;
  if (error instanceof OpenAI.APIUserAbortError) return abortedError(undefined);
  if (error instanceof OpenAI.APIConnectionTimeoutError) {
    return new LlmError('TIMEOUT', `Provider "${provider}" did not answer in time.`, { cause: error, details: { provider } });
  }
  if (error instanceof OpenAI.APIConnectionError) {
    return new LlmError('TRANSPORT', `Could not reach provider "${provider}": ${causeMessage(error)}`, { cause: error, details: { provider } });
  }
  if (error instanceof OpenAI.APIError) {
    const inner = (error.error ?? undefined) as { code?: unknown; type?: unknown; status_code?: unknown; message?: unknown } | undefined;
    const status = typeof error.status === 'number' ? error.status : typeof inner?.status_code === 'number' ? inner.status_code : undefined;
    const providerCode = typeof error.code === 'string' ? error.code : typeof inner?.code === 'string' ? inner.code : undefined;
    const providerType = typeof error.type === 'string' ? error.type : typeof inner?.type === 'string' ? inner.type : undefined;
    const code = classifyProviderError({ status, providerCode, providerType });
    const retryAfterMs = error.headers ? retryAfterMsOf(error.headers) : undefined;
    const text = typeof inner?.message === 'string' ? inner.message : error.message;
    const where = error.status === undefined ? ' (mid-stream error event)' : '';
    return new LlmError(code, `Provider "${provider}"${status !== undefined ? ` (HTTP ${status})` : ''}${where}: ${text}`, {
      cause: error,
      details: { provider, status, providerCode, providerType, providerRetryAfterMs: retryAfterMs },
    });
  }
  if (isNetworkFailure(error)) {
    return new LlmError('TRANSPORT', `The connection to provider "${provider}" broke mid-stream: ${causeMessage(error)}`, { cause: error, details: { provider } });
  }
  if (error instanceof SyntaxError) {
    return new LlmError('MALFORMED_RESPONSE', `Provider "${provider}" sent a stream event that is not JSON: ${error.message}`, { cause: error, details: { provider } });
  }
  if (error instanceof Error && error.name === 'AbortError') return abortedError(error);
  return new LlmError('UNKNOWN', `Provider "${provider}" call failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error, details: { provider } });
}

/** Provider codes with a meaning of their own (they win over the HTTP status, e.g. quota on a 429). */
const CODE_MAP: Record<string, LlmErrorCode> = {
  insufficient_quota: 'QUOTA_EXCEEDED',
  billing_hard_limit_reached: 'QUOTA_EXCEEDED',
  context_length_exceeded: 'CONTEXT_WINDOW_EXCEEDED',
  rate_limit_exceeded: 'RATE_LIMIT',
  invalid_api_key: 'AUTH',
  server_error: 'SERVER',
  server_is_overloaded: 'SERVER',
  // Groq: the model produced a tool call that failed validation: a malformed response, worth a retry.
  tool_use_failed: 'MALFORMED_RESPONSE',
};

const TYPE_MAP: Record<string, LlmErrorCode> = {
  insufficient_quota: 'QUOTA_EXCEEDED',
  server_error: 'SERVER',
  overloaded_error: 'SERVER',
  api_error: 'SERVER',
  rate_limit_error: 'RATE_LIMIT',
  authentication_error: 'AUTH',
  permission_error: 'AUTH',
  invalid_request_error: 'INVALID_REQUEST',
};

/**
 * The code of a provider failure: 401/403 → `AUTH`; a known provider code (`insufficient_quota`,
 * `context_length_exceeded`, …); then the status (402 → `QUOTA_EXCEEDED`, 408 → `TIMEOUT`,
 * 429 → `RATE_LIMIT`, 5xx/529 → `SERVER`, other 4xx → `INVALID_REQUEST`); then the error type; else `UNKNOWN`.
 */
export function classifyProviderError(input: { status?: number; providerCode?: string; providerType?: string }): LlmErrorCode {
  const { status, providerCode, providerType } = input;
  if (status === 401 || status === 403) return 'AUTH';
  if (providerCode !== undefined && CODE_MAP[providerCode] !== undefined) return CODE_MAP[providerCode]!;
  if (status !== undefined) {
    if (status === 402) return 'QUOTA_EXCEEDED';
    if (status === 408) return 'TIMEOUT';
    if (status === 429) return 'RATE_LIMIT';
    if (status >= 500) return 'SERVER';
    if (status >= 400) return 'INVALID_REQUEST';
  }
  if (providerType !== undefined && TYPE_MAP[providerType] !== undefined) return TYPE_MAP[providerType]!;
  return 'UNKNOWN';
}

/** `retry-after-ms` (ms), else `retry-after` (seconds, or an HTTP date), in ms; undefined when absent or bad. */
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

function isNetworkFailure(error: unknown): boolean {
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

/** One SDK client per route, created on first use and rebuilt when the key changes. */
export class ClientCache {
  private readonly clients = new Map<string, { key: string; client: OpenAI }>();

  /** @throws LlmError `AUTH` when the route's API key variable is unset or empty. */
  get(route: OpenAIRoute): OpenAI {
    const key = process.env[route.apiKeyEnv];
    if (key === undefined || key.trim() === '') {
      throw new LlmError('AUTH', `No API key for provider "${route.provider}": set the environment variable ${route.apiKeyEnv}.`, {
        details: { provider: route.provider, apiKeyEnv: route.apiKeyEnv },
      });
    }
    const cached = this.clients.get(route.provider);
    if (cached !== undefined && cached.key === key) return cached.client;
    const client = new OpenAI({
      apiKey: key,
      baseURL: route.baseURL,
      maxRetries: 0,
      ...(route.headers ? { defaultHeaders: route.headers } : {}),
    });
    this.clients.set(route.provider, { key, client });
    return client;
  }
}

/** What a stream parser offers the pump: `push` appends chunks to `out`; `finish` appends the last ones or throws. */
export interface StreamParser<Event> {
  readonly out: StreamChunk[];
  push(event: Event): void;
  finish(): void;
}

/**
 * Drives one SDK stream through a parser as an `AsyncIterator<StreamChunk>`, without an async
 * generator per chunk (the hot path: one promise per chunk). The request starts at the first `next()`;
 * the idle timer runs from then on. Failures are thrown as `LlmError` (see `CallControl.toLlmError`);
 * `return()` (the consumer stopped) releases the request.
 */
export class StreamPump<Event> implements AsyncIterableIterator<StreamChunk> {
  private control: CallControl | undefined;
  private iterator: AsyncIterator<Event> | undefined;
  private pos = 0;
  private done = false;

  constructor(
    private readonly provider: string,
    private readonly signal: AbortSignal | undefined,
    private readonly idleMs: number,
    private readonly open: (signal: AbortSignal) => Promise<unknown>,
    private readonly parser: StreamParser<Event>,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<StreamChunk>> {
    const out = this.parser.out;
    for (;;) {
      if (this.pos < out.length) return { value: out[this.pos++]!, done: false };
      if (this.done) return { value: undefined, done: true };
      if (this.pos !== 0) {
        out.length = 0;
        this.pos = 0;
      }
      const control = (this.control ??= new CallControl(this.signal, this.idleMs));
      try {
        control.wait();
        if (this.iterator === undefined) this.iterator = ((await this.open(control.signal)) as AsyncIterable<Event>)[Symbol.asyncIterator]();
        const step = await this.iterator.next();
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
        throw control.toLlmError(error, this.provider);
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
