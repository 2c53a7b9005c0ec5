/**
 * Transport of the Anthropic plugin: the SDK client per route, the stream pump bound to this SDK's
 * failures, and the mapping of Anthropic HTTP failures to `LlmError` codes. The SDK-neutral parts
 * (idle timeout, abort, network and parse failures) are the runtime's adapter kit.
 *
 * API error mapping (status, error type and `details.error_code`; message text only for the one case
 * Anthropic gives no code for):
 * - with a status: 401/403 → `AUTH`; 402 or type `billing_error` → `QUOTA_EXCEEDED`;
 *   429 → `RATE_LIMIT` (+ `providerRetryAfterMs` from `retry-after-ms` / `retry-after`); 408 → `TIMEOUT`;
 *   5xx and 529 (`overloaded_error`) → `SERVER`; 400 whose `error_code` names a context overflow, or
 *   (no code at all) whose message says "prompt is too long" → `CONTEXT_WINDOW_EXCEEDED`; other 4xx →
 *   `INVALID_REQUEST`.
 * - without a status (an `event: error` after HTTP 200): by `error.type`:
 *   `overloaded_error`/`api_error` → `SERVER` (retryable), `rate_limit_error` → `RATE_LIMIT`,
 *   `authentication_error`/`permission_error` → `AUTH`, `billing_error` → `QUOTA_EXCEEDED`,
 *   `timeout_error` → `TIMEOUT`, `invalid_request_error` → `INVALID_REQUEST`, else `SERVER`.
 */
import Anthropic from '@anthropic-ai/sdk';
import { LlmError, mapSdkFailure, retryAfterMsOf, sdkLogger, secrets, StreamPump, type LlmErrorCode, type StreamParser } from '../../runtime/index.ts';
import type { AnthropicRoute } from './config.ts';

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

/** Maps what the Anthropic SDK (or the network under it) throws to an `LlmError`. */
export function mapSdkError(error: unknown, provider: string, baseURL?: string): LlmError {
  return mapSdkFailure(error, provider, Anthropic, mapApiError, baseURL);
}

function mapApiError(error: InstanceType<typeof Anthropic.APIError>, provider: string): LlmError {
  const status = typeof error.status === 'number' ? error.status : undefined;
  const type = typeof error.type === 'string' ? error.type : undefined;
  const errorCode = typeof error.errorCode === 'string' ? error.errorCode : undefined;
  const apiMessage = typeof error.apiMessage === 'string' ? error.apiMessage : error.message;
  const code = classifyAnthropicError({ status, type, errorCode, message: apiMessage });
  const retryAfterMs = error.headers ? retryAfterMsOf(error.headers) : undefined;
  const where = status === undefined ? ' (error event mid-stream)' : '';
  return new LlmError(code, `Provider "${provider}"${status !== undefined ? ` (HTTP ${status})` : ''}${where}: ${type ? `${type}: ` : ''}${secrets().redact(String(apiMessage))}`, {
    cause: error,
    details: { provider, status, providerCode: errorCode ?? type, providerType: type, providerRetryAfterMs: retryAfterMs },
  });
}

/** The SDK client of a route (its own retries off: llm-retry is the one retry layer). */
export function createAnthropicClient(route: AnthropicRoute, apiKey: string): Anthropic {
  // The key is masked wherever it could be echoed (a provider's error text, a log line).
  if (apiKey !== '') secrets().add(apiKey, route.apiKeyEnv || `${route.provider} API key`); // '' : a keyless server
  // The SDK's own log lines (an unparseable stream frame, say) go out escaped and masked, not raw.
  return new Anthropic({ apiKey, baseURL: route.baseURL, maxRetries: 0, logger: sdkLogger(`[anthropic sdk]`), ...(route.headers ? { defaultHeaders: route.headers } : {}) });
}

/** Drives one Anthropic SDK stream through a parser (see the kit's `StreamPump`). */
export function pumpStream<Event>(route: AnthropicRoute, signal: AbortSignal | undefined, open: (signal: AbortSignal) => Promise<unknown>, parser: StreamParser<Event>): StreamPump<Event> {
  return new StreamPump<Event>({ provider: route.provider, signal, idleMs: route.idleTimeoutMs, open, parser, mapError: (error, provider) => mapSdkError(error, provider, route.baseURL) });
}
