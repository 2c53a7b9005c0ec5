/**
 * The OpenTelemetry GenAI semantic conventions this plugin emits (Development status; the names of
 * `@opentelemetry/semantic-conventions` 1.45 `incubating`, which recommends copying incubating names
 * rather than importing them at run time — `test/otel/conventions.test.ts` checks each copy against
 * the pinned package), plus the few `harness.*` names of what the conventions do not cover (steps,
 * retries, approvals).
 *
 * Provider name: the Harness route's provider id (`openai`, `anthropic`, `deepseek` are the
 * conventions' own values; `scripted` and `openai-compatible` are ours). `gen_ai.system` (the name
 * before 1.37) is not emitted.
 */
import type { FinishReason, TokenUsage } from '../../runtime/index.ts';

export const GEN_AI = {
  OPERATION_NAME: 'gen_ai.operation.name',
  PROVIDER_NAME: 'gen_ai.provider.name',
  CONVERSATION_ID: 'gen_ai.conversation.id',
  AGENT_NAME: 'gen_ai.agent.name',
  REQUEST_MODEL: 'gen_ai.request.model',
  REQUEST_STREAM: 'gen_ai.request.stream',
  REQUEST_MAX_TOKENS: 'gen_ai.request.max_tokens',
  REQUEST_TEMPERATURE: 'gen_ai.request.temperature',
  REQUEST_STOP_SEQUENCES: 'gen_ai.request.stop_sequences',
  RESPONSE_MODEL: 'gen_ai.response.model',
  RESPONSE_ID: 'gen_ai.response.id',
  RESPONSE_FINISH_REASONS: 'gen_ai.response.finish_reasons',
  RESPONSE_TIME_TO_FIRST_CHUNK: 'gen_ai.response.time_to_first_chunk',
  USAGE_INPUT_TOKENS: 'gen_ai.usage.input_tokens',
  USAGE_OUTPUT_TOKENS: 'gen_ai.usage.output_tokens',
  USAGE_CACHE_READ_INPUT_TOKENS: 'gen_ai.usage.cache_read.input_tokens',
  USAGE_CACHE_CREATION_INPUT_TOKENS: 'gen_ai.usage.cache_creation.input_tokens',
  USAGE_REASONING_OUTPUT_TOKENS: 'gen_ai.usage.reasoning.output_tokens',
  TOOL_NAME: 'gen_ai.tool.name',
  TOOL_CALL_ID: 'gen_ai.tool.call.id',
  TOOL_TYPE: 'gen_ai.tool.type',
  TOOL_CALL_ARGUMENTS: 'gen_ai.tool.call.arguments',
  TOOL_CALL_RESULT: 'gen_ai.tool.call.result',
  INPUT_MESSAGES: 'gen_ai.input.messages',
  OUTPUT_MESSAGES: 'gen_ai.output.messages',
  SYSTEM_INSTRUCTIONS: 'gen_ai.system_instructions',
  TOKEN_TYPE: 'gen_ai.token.type',
} as const;

/** `gen_ai.operation.name` values. */
export const OPERATION = { CHAT: 'chat', EXECUTE_TOOL: 'execute_tool', INVOKE_AGENT: 'invoke_agent' } as const;

/** Metric names (histograms; seconds and `{token}`). */
export const METRIC = {
  TOKEN_USAGE: 'gen_ai.client.token.usage',
  OPERATION_DURATION: 'gen_ai.client.operation.duration',
  TIME_TO_FIRST_CHUNK: 'gen_ai.client.operation.time_to_first_chunk',
} as const;

/** The stable `error.type`. */
export const ERROR_TYPE = 'error.type';

/** What the conventions do not name. */
export const HARNESS = {
  TURN: 'harness.turn',
  STEP: 'harness.step',
  TURN_END_REASON: 'harness.turn.end_reason',
  /** 1 for a step's first model call, 2 for its first retry, … */
  ATTEMPT: 'harness.attempt',
  RETRY_EVENT: 'harness.retry',
  RETRY_ATTEMPT: 'harness.retry.attempt',
  RETRY_MAX_RETRIES: 'harness.retry.max_retries',
  RETRY_DELAY_MS: 'harness.retry.delay_ms',
  APPROVAL_EVENT: 'harness.approval',
  APPROVAL_DECISION: 'harness.approval.decision',
  APPROVAL_DECIDED_BY: 'harness.approval.decided_by',
  APPROVAL_REASON: 'harness.approval.reason',
  TOOL_START_EVENT: 'harness.tool.start',
  INTERRUPTED: 'harness.interrupted',
} as const;

/**
 * Bucket boundaries the conventions advise: `gen_ai.client.token.usage` in tokens,
 * the durations in seconds.
 */
export const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
export const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/**
 * `gen_ai.response.finish_reasons` for a Harness finish: the common values of the conventions'
 * examples (`stop`, `tool_calls`, `length`), else the kind (`error`, `aborted`).
 */
export function finishReasonOf(finish: FinishReason): string {
  switch (finish.kind) {
    case 'tool-calls':
      return 'tool_calls';
    case 'max-tokens':
      return 'length';
    default:
      return finish.kind;
  }
}

/**
 * Usage attributes, only for counts the provider reported. The conventions count cached tokens in
 * `gen_ai.usage.input_tokens` (Harness's `inputTokens` excludes them), and reasoning tokens inside
 * output tokens (as Harness does): input = input + cache read + cache write, when input is known.
 */
export function usageAttributes(usage: TokenUsage | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  if (usage === undefined) return out;
  const known = (value: number | undefined): value is number => typeof value === 'number' && Number.isFinite(value);
  if (known(usage.inputTokens))
    out[GEN_AI.USAGE_INPUT_TOKENS] = usage.inputTokens + (known(usage.cacheReadTokens) ? usage.cacheReadTokens : 0) + (known(usage.cacheWriteTokens) ? usage.cacheWriteTokens : 0);
  if (known(usage.outputTokens)) out[GEN_AI.USAGE_OUTPUT_TOKENS] = usage.outputTokens;
  if (known(usage.cacheReadTokens)) out[GEN_AI.USAGE_CACHE_READ_INPUT_TOKENS] = usage.cacheReadTokens;
  if (known(usage.cacheWriteTokens)) out[GEN_AI.USAGE_CACHE_CREATION_INPUT_TOKENS] = usage.cacheWriteTokens;
  if (known(usage.reasoningTokens)) out[GEN_AI.USAGE_REASONING_OUTPUT_TOKENS] = usage.reasoningTokens;
  return out;
}
