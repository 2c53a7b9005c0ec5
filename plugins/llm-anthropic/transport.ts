/**
 * Transport helpers of the Anthropic plugin: the per-call abort/idle-timeout control, the lazily
 * created SDK client per route, and the mapping of SDK / HTTP failures to `LlmError` codes.
 *
 * Error mapping (status, error type and `details.error_code`; message text only for the one case
 * Anthropic gives no code for):
 * - our controller aborted: `TIMEOUT` when the idle timer fired, else `ABORTED`; `APIUserAbortError` → `ABORTED`.
 * - `APIConnectionTimeoutError` → `TIMEOUT`; `APIConnectionError` (no headers) → `TRANSPORT`.
 * - an undici failure thrown from the body (`TypeError('terminated')`, cause `UND_ERR_*`) → `TRANSPORT`.
 * - `APIError` with a status: 401/403 → `AUTH`; 402 or type `billing_error` → `QUOTA_EXCEEDED`;
 *   429 → `RATE_LIMIT` (+ `providerRetryAfterMs` from `retry-after-ms` / `retry-after`); 408 → `TIMEOUT`;
 *   5xx and 529 (`overloaded_error`) → `SERVER`; 400 whose `error_code` names a context overflow, or
 *   (no code at all) whose message says "prompt is too long" → `CONTEXT_WINDOW_EXCEEDED`; other 4xx →
 *   `INVALID_REQUEST`.
 * - `APIError` without a status (an `event: error` after HTTP 200): by `error.type`:
 *   `overloaded_error`/`api_error` → `SERVER` (retryable), `rate_limit_error` → `RATE_LIMIT`,
 *   `authentication_error`/`permission_error` → `AUTH`, `billing_error` → `QUOTA_EXCEEDED`,
 *   `timeout_error` → `TIMEOUT`, `invalid_request_error` → `INVALID_REQUEST`, else `SERVER`.
 * - a `SyntaxError` (an event that is not JSON) → `MALFORMED_RESPONSE`; anything else → `UNKNOWN`.
 */
import Anthropic from '@anthropic-ai/sdk';
import { HarnessError, LlmError, type LlmErrorCode, type StreamChunk } from '../../runtime/index.ts';
import type { AnthropicRoute } from './config.ts';

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

  get signal(): AbortSignal {
    return this.controller.signal;
  }

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

  throwIfStopped(provider: string): void {
    if (this.timedOut) throw timeoutError(provider, this.idleMs);
    if (this.userAborted) throw abortedError(this.user?.reason);
  }

  dispose(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.onUserAbort !== undefined) this.user!.removeEventListener('abort', this.onUserAbort);
    if (!this.controller.signal.aborted) this.controller.abort();
  }

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
  return new LlmError('ABORTED', reason instanceof Error && reason.message ? reason.message : 'The request was aborted.');
}

const TYPE_MAP: Record<string, LlmErrorCode> = {
  overloaded_error: 'SERVER',
  api_error: 'SERVER',
  rate_limit_error: 'RATE_LIMIT',
  authentication_error: 'AUTH',
  permission_error: 'AUTH',
  billing_error: 'QUOTA_EXCEEDED',
  timeout_error: 'TIMEOUT',
  gateway_timeout_error: 'TIMEOUT',
  invalid_request_error: 'INVALID_REQUEST',
  not_found_error: 'INVALID_REQUEST',
  request_too_large: 'INVALID_REQUEST',
};

const CONTEXT_CODES = new Set(['prompt_too_long', 'context_length_exceeded', 'model_context_window_exceeded']);

/** The code of an Anthropic failure (see the module docstring). */
export function classifyAnthropicError(input: { status?: number; type?: string; errorCode?: string; message?: string }): LlmErrorCode {
  const { status, type, errorCode } = input;
  if (status === 401 || status === 403) return 'AUTH';
  if (errorCode !== undefined && CONTEXT_CODES.has(errorCode)) return 'CONTEXT_WINDOW_EXCEEDED';
  if (status === 402 || type === 'billing_error') return 'QUOTA_EXCEEDED';
  if (status === 429) return 'RATE_LIMIT';
  if (status === 408) return 'TIMEOUT';
  if (status !== undefined && status >= 500) return 'SERVER';
  if (status !== undefined && status >= 400) {
    // Anthropic sends context overflow as a plain 400 invalid_request_error: the message is all there is.
    if (status === 400 && errorCode === undefined && /prompt is too long/i.test(input.message ?? '')) return 'CONTEXT_WINDOW_EXCEEDED';
    return 'INVALID_REQUEST';
  }
  if (type !== undefined && TYPE_MAP[type] !== undefined) return TYPE_MAP[type]!;
  return 'SERVER';
}

export function mapSdkError(error: unknown, provider: string): LlmError {
  if (HarnessError.is(error)) return error as LlmError;
  if (error instanceof Anthropic.APIUserAbortError) return abortedError(undefined);
  if (error instanceof Anthropic.APIConnectionTimeoutError) {
    return new LlmError('TIMEOUT', `Provider "${provider}" did not answer in time.`, { cause: error, details: { provider } });
  }
  if (error instanceof Anthropic.APIConnectionError) {
    return new LlmError('TRANSPORT', `Could not reach provider "${provider}": ${causeMessage(error)}`, { cause: error, details: { provider } });
  }
  if (error instanceof Anthropic.APIError) {
    const status = typeof error.status === 'number' ? error.status : undefined;
    const type = typeof error.type === 'string' ? error.type : undefined;
    const errorCode = typeof error.errorCode === 'string' ? error.errorCode : undefined;
    const apiMessage = typeof error.apiMessage === 'string' ? error.apiMessage : error.message;
    const code = classifyAnthropicError({ status, type, errorCode, message: apiMessage });
    const retryAfterMs = error.headers ? retryAfterMsOf(error.headers) : undefined;
    const where = status === undefined ? ' (error event mid-stream)' : '';
    return new LlmError(code, `Provider "${provider}"${status !== undefined ? ` (HTTP ${status})` : ''}${where}: ${type ? `${type}: ` : ''}${apiMessage}`, {
      cause: error,
      details: { provider, status, providerCode: errorCode ?? type, providerType: type, providerRetryAfterMs: retryAfterMs },
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
  return error instanceof TypeError && (error.message === 'terminated' || error.message === 'fetch failed');
}

function causeMessage(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) return `${(error as Error).message} (${cause.message})`;
  return error instanceof Error ? error.message : String(error);
}

/** One SDK client per route, made on first use and rebuilt when the key changes. */
export class ClientCache {
  private readonly clients = new Map<string, { key: string; client: Anthropic }>();

  /** @throws LlmError `AUTH` when the route's API key variable is unset or empty. */
  get(route: AnthropicRoute): Anthropic {
    const key = process.env[route.apiKeyEnv];
    if (key === undefined || key.trim() === '') {
      throw new LlmError('AUTH', `No API key for provider "${route.provider}": set the environment variable ${route.apiKeyEnv}.`, {
        details: { provider: route.provider, apiKeyEnv: route.apiKeyEnv },
      });
    }
    const cached = this.clients.get(route.provider);
    if (cached !== undefined && cached.key === key) return cached.client;
    const client = new Anthropic({
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
