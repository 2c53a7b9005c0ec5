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
  /**
   * Set by the seam, not the adapter: `digests[i]` fingerprints the text of the i-th block as the
   * adapter produced it (text and reasoning blocks; `null` for others). The assembler compares it
   * with the text it assembled after `llm/stream` middleware: a block rewritten since has its
   * `blocks[i]` entry (and digest) set to `null` — signed or encrypted state never describes
   * content it was not made for (seed 002 14.2 lock-step). See {@link contentDigest}.
   */
  readonly digests?: readonly (string | null)[];
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
  /** A bug in a plugin (an adapter, its parser, a middleware): never retried; `plugin` names it, `stack` has the trace. */
  | 'PLUGIN_ERROR'
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
 * The stream protocol (seed 002 14.2) — what an adapter emits, what `llm/stream` middleware sees and
 * may rewrite, what the assembler builds a message from and the journal records.
 *
 * **A block** is every chunk with the same `index` (a small non-negative integer; blocks are ordered
 * by it, gaps allowed). Its chunks, in order:
 * - `block-start{index, blockType, id?, name?}` — optional; names the block's type before content
 *   comes (a tool call's `id`/`name` may ride on it).
 * - deltas — `text-delta` (text), `reasoning-delta` (reasoning), `tool-call-delta` (tool-call: raw
 *   JSON fragments, `id`/`name` usually on the first). **For these three types the deltas are the
 *   content, and the only content**: the block's `text` (or `arguments`) is exactly the concatenation
 *   of its deltas. A delta of another type than its block, or after its `block-end`, is ignored.
 * - `block-end{index, block?}` — optional (a block still open at `finish` is closed there); the
 *   first one wins, later ones are ignored. For a delta-built block it carries **no content**:
 *   `block` is omitted, or carries only what deltas cannot say (`refusal` on text, `redacted` on
 *   reasoning, a tool call's `id`/`name`); its `text` / `arguments` are not read — adapters leave
 *   them `''`. (One exception, for streams recorded before this rule, e.g. DeepSeek Harness
 *   journals: a block whose deltas carried no content at all is given whole by its `block-end`.)
 *   For any other type (`image`, `file`, plugin types) `block` is required and is the block.
 * - `usage{usage}` — any time, any number; merged field-wise, a later count wins. Counts the
 *   provider did not report are absent: never invent a 0.
 * - `finish{finish, replayState?}` — exactly one, **last**: nothing follows it. A successful finish
 *   may carry the replay envelope, `blocks[i]` belonging to the i-th block in index order.
 *
 * Why deltas and not `block-end`: a middleware that rewrites, splits, merges or drops text and
 * reasoning deltas changes the assembled message, the journal (which records the chunks) and the
 * next request alike, and cannot be silently undone by a `block-end` repeating the original text.
 * A rewritten block loses its replay entry (see `ReplayEnvelope.digests`); an untouched one keeps it
 * byte for byte. Moving, splitting or dropping whole blocks breaks the envelope's alignment and the
 * envelope is dropped. To rewrite text across delta boundaries use {@link rewriteText}; to check a
 * middleware against these rules use `checkMiddleware` from `harness-runtime/testing`.
 */
export interface StreamChunkMap {
  'block-start': { readonly type: 'block-start'; readonly index: number; readonly blockType: string; readonly id?: string; readonly name?: string };
  'text-delta': { readonly type: 'text-delta'; readonly index: number; readonly text: string };
  'reasoning-delta': { readonly type: 'reasoning-delta'; readonly index: number; readonly text: string };
  /** `arguments` is a raw JSON fragment; `id` and `name` usually arrive once, on the first delta. */
  'tool-call-delta': { readonly type: 'tool-call-delta'; readonly index: number; readonly id?: string; readonly name?: string; readonly arguments?: string };
  /** Closes a block; for text, reasoning and tool-call blocks `block` carries attributes only (see above). */
  'block-end': { readonly type: 'block-end'; readonly index: number; readonly block?: ContentBlock };
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
