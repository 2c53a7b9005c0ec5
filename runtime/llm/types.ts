/**
 * The provider-neutral vocabulary (seed 002 14.1, 14.2; DESIGN "ctx.llm").
 *
 * Messages, content blocks, stream chunks, finish reasons, usage and replay state: the common
 * language of the loop, the journal and every plugin. Every map here is extensible by declaration
 * merging (`ContentBlockMap`, `MessageSourceMap`, `FinishReasonMap`, `StreamChunkMap`).
 */
import type { Failure } from '../kernel/errors.ts';
import type { JsonSchema } from '../kernel/schema.ts';

/** A message's id (a UUID unless the creator gave one). */
export type MessageId = string;
/** A tool call's id, as the model (or adapter) gave it; pairs a `tool-call` block with its `tool-result`. */
export type CallId = string;

// ── Content blocks ────────────────────────────────────────────────────────────────────────────

/** Visible text of a message. */
export interface TextBlock {
  readonly type: 'text';
  readonly text: string;
  /** The model declined (OpenAI `refusal`): the text is the refusal, not an answer. */
  readonly refusal?: true;
}

/**
 * Visible reasoning. `text` may be empty when the provider only gave opaque replay state (encrypted
 * or redacted reasoning); that state then lives in the message's `ReplayEnvelope` entry for this block.
 */
export interface ReasoningBlock {
  readonly type: 'reasoning';
  readonly text: string;
  /** The provider withheld the content (Anthropic `redacted_thinking`). */
  readonly redacted?: true;
}

/** An image, as base64 `data` or a `url`. */
export interface ImageBlock {
  readonly type: 'image';
  readonly mediaType: string;
  readonly data?: string;
  readonly url?: string;
}

/** A document, as base64 `data` or a `url`. */
export interface FileBlock {
  readonly type: 'file';
  readonly mediaType: string;
  readonly name?: string;
  readonly data?: string;
  readonly url?: string;
}

/** A tool call; `arguments` is the raw JSON text the model produced, never parsed here. */
export interface ToolCallBlock {
  readonly type: 'tool-call';
  readonly id: CallId;
  readonly name: string;
  readonly arguments: string;
}

/** The answer to one tool call (`toolCallId`): text or images, `isError` when the call failed or was denied. */
export interface ToolResultBlock {
  readonly type: 'tool-result';
  readonly toolCallId: CallId;
  readonly content: readonly (TextBlock | ImageBlock)[];
  readonly isError: boolean;
}

/** Content block types by `type` (seed 002 14.1); extensible by declaration merging. */
export interface ContentBlockMap {
  text: TextBlock;
  reasoning: ReasoningBlock;
  image: ImageBlock;
  file: FileBlock;
  'tool-call': ToolCallBlock;
  'tool-result': ToolResultBlock;
}
/** Any content block: `text | reasoning | image | file | tool-call | tool-result` (plus merged types). */
export type ContentBlock = ContentBlockMap[keyof ContentBlockMap];
/** The `type` tag of a content block. */
export type ContentBlockType = ContentBlock['type'];

// ── Messages ──────────────────────────────────────────────────────────────────────────────────

/** What kind of injected context a plugin message is (seed 002 14.1); independent of who made it. */
export type ContextForm = 'instructions' | 'catalog' | 'snapshot' | 'notice' | 'relay' | 'recall';

/**
 * Provider-private replay state (seed 002 14.1): `response` is response-level metadata; `blocks[i]`
 * belongs to the i-th emitted block. Opaque to everyone but the adapter that made it, except for the
 * convention that `response.kind` and `response.version` name its format.
 */
export interface ReplayEnvelope {
  readonly response: unknown;
  readonly blocks?: readonly unknown[];
}

/** Where a message came from, by `kind` (seed 002 14.1); extensible by declaration merging. */
export interface MessageSourceMap {
  user: { readonly kind: 'user' };
  plugin: { readonly kind: 'plugin'; readonly plugin: string; readonly form?: ContextForm };
  model: { readonly kind: 'model'; readonly provider: string; readonly model: string; readonly replayState?: ReplayEnvelope };
  tool: { readonly kind: 'tool'; readonly callId: CallId };
}
/** `user | plugin{plugin, form?} | model{provider, model, replayState?} | tool{callId}`. */
export type MessageSource = MessageSourceMap[keyof MessageSourceMap];
/** The source of a model's reply: its route, model and the adapter's opaque replay state. */
export type ModelSource = MessageSourceMap['model'];

/** One message of a conversation (seed 002 14.1): `{id, role, content, source}`, deep-frozen by its constructors. */
export interface Message {
  readonly id: MessageId;
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: readonly ContentBlock[];
  readonly source: MessageSource;
}

/** A prompt, injected context or a goal continuation. */
export interface UserMessage extends Message {
  readonly role: 'user';
  readonly source: MessageSourceMap['user'] | MessageSourceMap['plugin'];
}

/** A model's reply; its source names the provider and model (and carries replay state). */
export interface AssistantMessage extends Message {
  readonly role: 'assistant';
  readonly source: ModelSource;
}

/** The answer to one tool call: a single tool-result block, coupled to the call by `source.callId`. */
export interface ToolResultMessage extends Message {
  readonly role: 'user';
  readonly content: readonly [ToolResultBlock];
  readonly source: MessageSourceMap['tool'];
}

// ── Usage, failures, finish ───────────────────────────────────────────────────────────────────

/**
 * Token counts as the provider reported them, normalised. The classes input, cache read, cache
 * write and output are disjoint (`inputTokens` excludes cached tokens, so their sum is the whole
 * prompt); `reasoningTokens` is the part of `outputTokens` spent on reasoning (a breakdown, not an
 * addend). A count the provider did not report is absent, never 0.
 */
export interface TokenUsage {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly cacheReadTokens?: number;
  readonly cacheWriteTokens?: number;
  readonly reasoningTokens?: number;
}

/** Stable codes of model-call failures (seed 002 14.4). */
export type LlmErrorCode =
  | 'NO_ADAPTER'
  | 'INVALID_ROUTE'
  | 'DUPLICATE_ADAPTER'
  | 'REGISTRATION_DISPOSED'
  | 'INVALID_PREPARED_CALL'
  | 'UNSUPPORTED_REASONING_EFFORT'
  | 'UNKNOWN_MODEL'
  | 'AUTH'
  | 'RATE_LIMIT'
  | 'QUOTA_EXCEEDED'
  | 'SERVER'
  | 'TIMEOUT'
  | 'TRANSPORT'
  | 'ABORTED'
  | 'EMPTY_RESPONSE'
  | 'MALFORMED_RESPONSE'
  | 'CONTEXT_WINDOW_EXCEEDED'
  | 'CONTENT_FILTER'
  | 'INVALID_REQUEST'
  | 'UNSUPPORTED'
  | 'INVALID_REPLAY_STATE'
  | 'UNKNOWN';

/** A frozen, JSON-safe failure. `status` is the HTTP status and `providerRetryAfterMs` the provider's own retry-after when known. */
export interface LlmFailure extends Failure {
  readonly code: LlmErrorCode | (string & {});
}

/** Why a model call ended, by `kind` (seed 002 14.2); `aborted` and `error` carry the failure. */
export interface FinishReasonMap {
  stop: { readonly kind: 'stop' };
  'tool-calls': { readonly kind: 'tool-calls' };
  'max-tokens': { readonly kind: 'max-tokens' };
  aborted: { readonly kind: 'aborted'; readonly failure: LlmFailure };
  error: { readonly kind: 'error'; readonly failure: LlmFailure };
}
/** `stop | tool-calls | max-tokens | aborted{failure} | error{failure}`. */
export type FinishReason = FinishReasonMap[keyof FinishReasonMap];

// ── Stream chunks ─────────────────────────────────────────────────────────────────────────────

/**
 * The chunks of a model stream, by `type` (seed 002 14.2). The protocol, in order:
 * - per content block: `block-start{index, blockType}`, then its deltas (`text-delta`,
 *   `reasoning-delta`, `tool-call-delta` with a raw JSON fragment), then `block-end{index, block}`
 *   with the complete block; `index` is the block's 0-based position in the message. A stream of
 *   deltas alone (no start/end) is valid too; a delta after its block ended is ignored.
 * - `usage{usage}` anywhere before the finish, any number of times (merged field by field, a later
 *   value wins); counts are disjoint and an unknown count is absent, never 0.
 * - `finish{finish, replayState?}` last: nothing follows it. A missing finish is read as `stop`.
 */
export interface StreamChunkMap {
  'block-start': { readonly type: 'block-start'; readonly index: number; readonly blockType: string; readonly id?: string; readonly name?: string };
  'text-delta': { readonly type: 'text-delta'; readonly index: number; readonly text: string };
  'reasoning-delta': { readonly type: 'reasoning-delta'; readonly index: number; readonly text: string };
  /** `arguments` is a raw JSON fragment; `id` and `name` usually arrive once, on the first delta. */
  'tool-call-delta': { readonly type: 'tool-call-delta'; readonly index: number; readonly id?: string; readonly name?: string; readonly arguments?: string };
  'block-end': { readonly type: 'block-end'; readonly index: number; readonly block: ContentBlock };
  usage: { readonly type: 'usage'; readonly usage: TokenUsage };
  /** Terminal: nothing follows it. A successful finish may carry the full replay envelope. */
  finish: { readonly type: 'finish'; readonly finish: FinishReason; readonly replayState?: ReplayEnvelope };
}
/** Any stream chunk (see {@link StreamChunkMap} for the order). */
export type StreamChunk = StreamChunkMap[keyof StreamChunkMap];

// ── Requests ──────────────────────────────────────────────────────────────────────────────────

/** What the model sees of a tool: name, description and the JSON Schema of its input. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
}

/** Why a call is made: the agent loop's own turn, or an auxiliary call sharing the seam. */
export type CallPurpose = 'agent' | 'compaction' | 'session-title' | (string & {});

/**
 * The call configuration bound to a journal `request/header` (seed 002 14.4). `temperature` is the
 * sampling temperature; `maxTokens` the output cap in tokens; `stop` the stop sequences.
 */
export interface LlmCallConfig {
  readonly provider: string;
  readonly model: string;
  readonly reasoningEffort?: string;
  readonly temperature?: number;
  readonly maxTokens?: number;
  readonly stop?: readonly string[];
}

/**
 * A request may carry an observer under this key: the seam calls it, synchronously and before the
 * adapter is called, with the exact request the adapter receives (after every `llm/stream`
 * middleware and the replay discipline). The agent loop journals that request (`request/snapshot`).
 * An object spread keeps it; adapters ignore it.
 */
export const OBSERVE_REQUEST: unique symbol = Symbol.for('harness.observeRequest');

/** One complete request (seed 002 14.3). */
export interface GenerateOptions extends LlmCallConfig {
  /** See {@link OBSERVE_REQUEST}. */
  readonly [OBSERVE_REQUEST]?: (request: GenerateOptions) => void;
  readonly messages: readonly Message[];
  readonly system?: string;
  readonly tools?: readonly ToolSpec[];
  readonly signal?: AbortSignal;
  readonly sessionId?: string;
  readonly purpose?: CallPurpose;
}

/** A model's metadata. Token counts are in tokens; an unknown value is absent. */
export interface ModelInfo {
  readonly id: string;
  readonly label?: string;
  readonly contextWindow?: number;
  readonly maxOutputTokens?: number;
  /** Accepted `reasoningEffort` values; absent means the model takes none. */
  readonly reasoningEfforts?: readonly string[];
  readonly defaultReasoningEffort?: string;
  readonly inputModalities?: readonly ('text' | 'image' | 'file')[];
}

/** How a provider route describes itself. */
export interface ProviderInfo {
  readonly provider: string;
  /** The adapter kind, e.g. `openai-chat`, `anthropic`; equals the `response.kind` of its envelopes. */
  readonly kind: string;
  readonly label?: string;
}
