/**
 * Call configuration and retry policy (seed 002 14.4). The seam resolves and stores the retry policy
 * with each prepared call; it never executes it — retries happen in `agent/request-error` (the
 * llm-retry plugin).
 */
import { deepFreeze } from '../kernel/freeze.ts';
import type { GenerateOptions, LlmCallConfig } from './types.ts';

const CONFIG_KEYS = ['provider', 'model', 'reasoningEffort', 'temperature', 'maxTokens'] as const;

/** Field-level equality of two call configs: decides whether a new `request/header` is journaled. */
export function callConfigEquals(a: LlmCallConfig, b: LlmCallConfig): boolean {
  for (const key of CONFIG_KEYS) if (a[key] !== b[key]) return false;
  const sa = a.stop ?? [];
  const sb = b.stop ?? [];
  if (sa.length !== sb.length) return false;
  for (let i = 0; i < sa.length; i++) if (sa[i] !== sb[i]) return false;
  return true;
}

/** The call-config fields of any options object, without undefined fields; frozen. */
export function pickCallConfig(options: LlmCallConfig): LlmCallConfig {
  const config: Record<string, unknown> = { provider: options.provider, model: options.model };
  if (options.reasoningEffort !== undefined) config.reasoningEffort = options.reasoningEffort;
  if (options.temperature !== undefined) config.temperature = options.temperature;
  if (options.maxTokens !== undefined) config.maxTokens = options.maxTokens;
  if (options.stop !== undefined) config.stop = [...options.stop];
  return deepFreeze(config as unknown as LlmCallConfig);
}

const agentLoopRequests = new WeakSet<object>();

/** Marks options as built by the agent loop (as opposed to an auxiliary call on the same seam). */
export function markAgentLoopRequest<T extends GenerateOptions>(options: T): T {
  agentLoopRequests.add(options);
  return options;
}

export function isAgentLoopRequest(options: GenerateOptions): boolean {
  return agentLoopRequests.has(options);
}

// ── Retry policy ──────────────────────────────────────────────────────────────────────────────

/** What a provider or a config says about retries; every field optional. */
export interface RetryPolicyConfig {
  /** `normal` retries the codes in `retryableCodes`; `always` retries every code but AUTH and ABORTED. */
  readonly mode?: 'normal' | 'always';
  readonly maxRetries?: number;
  readonly retryableCodes?: readonly string[];
  /** First backoff delay, ms; doubled per attempt. */
  readonly initialDelayMs?: number;
  /** Cap on any delay, ms, including a provider's `retry-after`: a longer one fails instead of waiting. */
  readonly maxDelayMs?: number;
  /** Random spread of each delay, 0..1 (0.2 = ±20%). */
  readonly jitterRatio?: number;
}

/**
 * The retry policy of one prepared call (seed 002 14.4), every field filled: `maxRetries` attempts
 * after the first, backoff from `initialDelayMs` doubling to `maxDelayMs` (ms) with `jitterRatio`
 * (0–1); `always` retries every code but `AUTH` and `ABORTED` (see {@link RetryPolicyConfig}).
 */
export interface ResolvedRetryPolicy {
  readonly mode: 'normal' | 'always';
  readonly maxRetries: number;
  readonly retryableCodes: readonly string[];
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly jitterRatio: number;
}

/**
 * Seed 000's LLMOutcome table: transient failures (timeout, transport, rate limit, server), malformed
 * and empty responses are retried in the same run; auth and user abort never are.
 */
export const DEFAULT_RETRY_POLICY: ResolvedRetryPolicy = deepFreeze({
  mode: 'normal',
  maxRetries: 4,
  retryableCodes: ['RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT', 'MALFORMED_RESPONSE', 'EMPTY_RESPONSE', 'UNKNOWN'],
  initialDelayMs: 1000,
  maxDelayMs: 30_000,
  jitterRatio: 0.2,
});

/** Merges policy layers, later wins field by field, over {@link DEFAULT_RETRY_POLICY}. Frozen. */
export function resolveRetryPolicy(...layers: (RetryPolicyConfig | undefined)[]): ResolvedRetryPolicy {
  const out: Record<string, unknown> = { ...DEFAULT_RETRY_POLICY };
  for (const layer of layers) {
    if (layer === undefined) continue;
    for (const [key, value] of Object.entries(layer)) if (value !== undefined) out[key] = Array.isArray(value) ? [...value] : value;
  }
  return deepFreeze(out as unknown as ResolvedRetryPolicy);
}

/** Whether a failure code is retried under a policy (AUTH, ABORTED and PLUGIN_ERROR never are). */
export function isRetryableCode(policy: ResolvedRetryPolicy, code: string): boolean {
  // A plugin's bug fails the same way every time: retrying only delays the report (issue 14).
  if (code === 'AUTH' || code === 'ABORTED' || code === 'PLUGIN_ERROR') return false;
  return policy.mode === 'always' || policy.retryableCodes.includes(code);
}
