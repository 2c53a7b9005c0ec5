/**
 * Transport of the OpenAI plugin: the SDK client per route, the stream pump bound to this SDK's
 * failures, and the mapping of OpenAI / OpenAI-compatible HTTP failures to `LlmError` codes. The
 * SDK-neutral parts (idle timeout, abort, network and parse failures) are the runtime's adapter kit.
 *
 * API errors (an HTTP status, or a mid-stream `error` object with no status: its `status_code` or a
 * numeric `code` is read as the status) are classified by status and provider codes only — message text is never inspected: see {@link classifyProviderError}.
 * Failures carry `details: { status?, providerCode?, providerType?, providerRetryAfterMs?, provider }`.
 */
import OpenAI from 'openai';
import { LlmError, mapSdkFailure, retryAfterMsOf, sdkLogger, secrets, StreamPump, type LlmErrorCode, type StreamParser } from '../../runtime/index.ts';
import type { OpenAIRoute } from './config.ts';

/** Maps what the OpenAI SDK (or the network under it) throws to an `LlmError`. */
export function mapSdkError(error: unknown, provider: string, baseURL?: string): LlmError {
  return mapSdkFailure(error, provider, OpenAI, mapApiError, baseURL);
}

function mapApiError(error: InstanceType<typeof OpenAI.APIError>, provider: string): LlmError {
  const inner = (error.error ?? undefined) as { code?: unknown; type?: unknown; status_code?: unknown; message?: unknown } | undefined;
  // A numeric `code` (OpenRouter and other gateways: `{"error":{"code":429,…}}`) is an HTTP status, not a provider code.
  const numericCode = [error.code, inner?.code].find((code): code is number => typeof code === 'number' && Number.isInteger(code) && code >= 100 && code <= 599);
  const status = typeof error.status === 'number' ? error.status : typeof inner?.status_code === 'number' ? inner.status_code : numericCode;
  const providerCode = typeof error.code === 'string' ? error.code : typeof inner?.code === 'string' ? inner.code : undefined;
  const providerType = typeof error.type === 'string' ? error.type : typeof inner?.type === 'string' ? inner.type : undefined;
  const code = classifyProviderError({ status, providerCode, providerType });
  const retryAfterMs = error.headers ? retryAfterMsOf(error.headers) : undefined;
  const text = typeof inner?.message === 'string' ? inner.message : error.message;
  const where = error.status === undefined ? ' (mid-stream error event)' : '';
  return new LlmError(code, `Provider "${provider}"${status !== undefined ? ` (HTTP ${status})` : ''}${where}: ${secrets().redact(String(text))}`, {
    cause: error,
    details: { provider, status, providerCode, providerType, providerRetryAfterMs: retryAfterMs },
  });
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

/** The SDK client of a route (its own retries off: llm-retry is the one retry layer). */
export function createOpenAIClient(route: OpenAIRoute, apiKey: string): OpenAI {
  // The key is masked wherever it could be echoed (a provider's error text, a log line).
  if (apiKey !== '') secrets().add(apiKey, route.apiKeyEnv || `${route.provider} API key`); // '' : a keyless server
  // The SDK's own log lines (an unparseable stream frame, say) go out escaped and masked, not raw.
  // A keyless server (apiKeyEnv: false): the SDK insists on a key, so it gets a placeholder and the
  // Authorization header is explicitly left out.
  const keyless = apiKey === '';
  const defaultHeaders = keyless ? { ...route.headers, Authorization: null } : route.headers;
  return new OpenAI({ apiKey: keyless ? 'keyless' : apiKey, baseURL: route.baseURL, maxRetries: 0, logger: sdkLogger(`[openai sdk]`), ...(defaultHeaders ? { defaultHeaders } : {}) });
}

/** Drives one OpenAI SDK stream through a parser (see the kit's `StreamPump`). */
export function pumpStream<Event>(route: OpenAIRoute, signal: AbortSignal | undefined, open: (signal: AbortSignal) => Promise<unknown>, parser: StreamParser<Event>): StreamPump<Event> {
  return new StreamPump<Event>({ provider: route.provider, signal, idleMs: route.idleTimeoutMs, open, parser, mapError: (error, provider) => mapSdkError(error, provider, route.baseURL) });
}
