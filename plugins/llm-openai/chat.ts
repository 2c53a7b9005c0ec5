/**
 * OpenAI Chat Completions adapter (kind `openai-chat`, replay version 1): api.openai.com and every
 * OpenAI-compatible server (DeepSeek, Groq, xAI, Mistral, Z.ai, OpenRouter, Hugging Face router, …),
 * through the `openai` SDK (`stream: true`, `stream_options.include_usage`, retries off).
 *
 * Stream → chunks (decisions where SOURCES.md leaves a choice):
 * - Blocks in content order: reasoning (`reasoning_content`, else `reasoning`), text (`content`),
 *   refusal (`refusal` → a text block with `refusal: true`), tool calls. Empty strings open nothing.
 *   A text/reasoning block ends when another kind of delta arrives; tool calls end at the finish.
 * - Tool calls are merged per provider `index`; quirks: no `index` (a new `id` opens a new call, no
 *   `id` continues the last one), any starting index (indexes are keys, not positions), an index
 *   reused with a different `id` (a new call), the whole call in one delta, an empty or repeated
 *   `name` on a continuation (the first non-empty name wins), a call without an id (one is made up).
 *   the deltas carry the raw arguments (`{}` sent as a delta when none came; `block-end` carries no
 *   content, per `StreamChunkMap`); no `block-end` for tool calls when the
 *   finish is `length` (their arguments may be cut; the assembler drops them anyway).
 * - Finish: `stop` → stop (tool-calls when tool calls were sent: some servers say `stop`),
 *   `tool_calls`/`function_call` → tool-calls, `length` → max-tokens, `content_filter` → error
 *   `CONTENT_FILTER`, DeepSeek's `insufficient_system_resource` → error `SERVER`; a `stop` with no
 *   text, no refusal and no tool call (reasoning alone does not count) → error `EMPTY_RESPONSE`
 *   (DeepSeek's rule, applied to every chat route); a body that ends with `data: [DONE]` but no
 *   finish_reason (some gateways) → as `stop`, with the usage it had; a body that ends with neither →
 *   error `TRANSPORT`. The stream is read to its end after the finish_reason: usage may follow.
 * - Several choices (`n > 1`; chunks interleaved by `choices[].index`): only choice 0 is the message,
 *   the others are ignored (the request never asks for more than one).
 * - Usage (last non-null `usage`, else `x_groq.usage`), normalised: `inputTokens` = DeepSeek's
 *   `prompt_cache_miss_tokens`, else `prompt_tokens − cached_tokens`; `cacheReadTokens` =
 *   `prompt_cache_hit_tokens`, else `prompt_tokens_details.cached_tokens`; `outputTokens` =
 *   `completion_tokens`, plus `reasoning_tokens` when the server's completion count excludes reasoning
 *   (compat `xai`, or detected: prompt + completion + reasoning = total); `reasoningTokens` =
 *   `completion_tokens_details.reasoning_tokens`. Unreported counts are absent; a reported 0 stays 0.
 * - Mid-stream `error` objects (e.g. Groq `event: error`, `data: {"error": …}`): the last chunk
 *   (chat-events.ts); its `usage`, if any, is kept, then `finish{error}` classified like an HTTP error
 *   (transport.ts: `status_code`, or a numeric `error.code`, is the status; `tool_use_failed` →
 *   `MALFORMED_RESPONSE`). Partial text/reasoning stays; open tool calls are dropped.
 *
 * Replay envelope: `{ response: { kind: 'openai-chat', version: 1, id?, model?, finishReason? },
 * blocks: [...] }` with one entry per emitted block: `{ field: 'reasoning_content' | 'reasoning' }` for a
 * reasoning block (the field it arrived in), null otherwise.
 *
 * Request (decisions): `system` and system-role messages → `system` messages; user text/images
 * (`image_url` with a data URL or URL)/files; an assistant turn → one message with `content` a string
 * (`""` when it has no text — never null), `tool_calls`, and — only when the message still carries this
 * adapter's replay state (same provider and kind) — its reasoning sent back in the field it came in
 * (`reasoning_content` always on `deepseek` routes); refusals go back as `refusal` on `openai`
 * routes and as text elsewhere. Tool results → `tool` messages (text only; images of a tool result
 * follow the run of tool messages as one user message). Media a model does not accept (its
 * `inputModalities`) become a bracketed placeholder text. `maxTokens` → `max_completion_tokens` on
 * `openai` routes, `max_tokens` elsewhere; `reasoningEffort` → `reasoning_effort` as given;
 * `temperature`, `stop` passed through; tools → `{ type: 'function', function: { name, description,
 * parameters } }` with the JSON Schema as is.
 */
import OpenAI from 'openai';
import {
  LlmError,
  type AssistantMessage,
  type LlmFailure,
  type ContentBlock,
  type GenerateOptions,
  type Message,
  type ReplayEnvelope,
  type StreamChunk,
  type StreamParser,
  type TokenUsage,
  type ToolResultBlock,
} from '../../runtime/index.ts';
import { CHAT_DONE, ChatEventStream } from './chat-events.ts';
import type { OpenAIRoute } from './config.ts';
import { acceptsModality, contentFilterError, emptyResponseError, mediaUrl, missingFinishError, omittedMedia, OpenAIAdapterBase, syntheticCallId } from './shared.ts';
import { mapSdkError, pumpStream } from './transport.ts';

export const CHAT_REPLAY_FORMAT = Object.freeze({ kind: 'openai-chat', version: 1 });

/** The response part of an `openai-chat` replay envelope. */
export interface ChatReplayResponse {
  readonly kind: 'openai-chat';
  readonly version: 1;
  readonly id?: string;
  readonly model?: string;
  readonly finishReason?: string;
}

/** A reasoning block's envelope entry: the delta field the reasoning arrived in. */
export interface ChatReasoningEntry {
  readonly field: 'reasoning_content' | 'reasoning';
}

export class OpenAIChatAdapter extends OpenAIAdapterBase {
  override readonly replayFormat = CHAT_REPLAY_FORMAT;
  protected readonly kind = 'openai-chat';

  /**
   * Streams one Chat Completions call. Failures are thrown as `LlmError` (the seam turns them into
   * the terminal finish); a finish-level failure (`EMPTY_RESPONSE`, `CONTENT_FILTER`) is yielded as
   * `finish{error}` after the content.
   * @throws LlmError `AUTH` (no key), `NO_ADAPTER` (unknown route) before any request.
   */
  stream(options: GenerateOptions): AsyncIterableIterator<StreamChunk> {
    const route = this.route(options.provider);
    const client = this.clients.get(route);
    const body = buildChatRequest(route, options) as unknown as OpenAI.ChatCompletionCreateParamsStreaming;
    return pumpStream<ChatEvent>(route, options.signal, (signal) => client.chat.completions.create(body, { signal, __streamClass: ChatEventStream }), new ChatStreamState(route));
  }

  override validateReplayState(envelope: ReplayEnvelope, message: AssistantMessage): string | undefined {
    if (envelope.blocks === undefined) return undefined;
    for (let i = 0; i < message.content.length; i++) {
      const entry = envelope.blocks[i] as { field?: unknown } | null | undefined;
      if (entry === null || entry === undefined) continue;
      if (message.content[i]!.type !== 'reasoning' || (entry.field !== 'reasoning_content' && entry.field !== 'reasoning')) {
        return `block ${i} (${message.content[i]!.type}) has an envelope entry the openai-chat adapter does not know`;
      }
    }
    return undefined;
  }
}

// ── Stream parsing ─────────────────────────────────────────────────────────────────────────────

/** The parts of a chat.completion.chunk this adapter reads (servers add and omit fields freely). */
interface ChatChunk {
  id?: string;
  model?: string;
  choices?: ChatChoice[] | null;
  usage?: ChatUsage | null;
  x_groq?: { usage?: ChatUsage | null } | null;
  /** A mid-stream error object (see chat-events.ts): the stream's last chunk. */
  error?: unknown;
}

interface ChatChoice {
  index?: number;
  delta?: ChatDelta | null;
  finish_reason?: string | null;
}

/** What the event stream yields (chat-events.ts): chunks, and `[DONE]`. */
type ChatEvent = ChatChunk | typeof CHAT_DONE;

interface ChatDelta {
  content?: string | null;
  refusal?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  tool_calls?: ChatToolDelta[] | null;
}

interface ChatToolDelta {
  index?: number;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}

interface ChatUsage {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  total_tokens?: number | null;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
  prompt_cache_hit_tokens?: number | null;
  prompt_cache_miss_tokens?: number | null;
}

interface ToolSlot {
  block: number;
  id: string;
  name: string;
  /** Some arguments came (the assembler keeps the text; here only "none at all" matters, for the `{}` default). */
  hasArgs: boolean;
}

/** block-end of a refusal block: its only attribute (the deltas were the text). */
const REFUSAL_ATTRIBUTES: ContentBlock = Object.freeze({ type: 'text', text: '', refusal: true });

const FLOW_NONE = 0;
const FLOW_TEXT = 1;
const FLOW_REFUSAL = 2;
const FLOW_REASONING = 3;

/** Turns chat chunks into stream chunks; `push` appends to `out`, which the caller drains. */
export class ChatStreamState implements StreamParser<ChatEvent> {
  readonly out: StreamChunk[] = [];
  private nextBlock = 0;
  private flow = FLOW_NONE;
  private flowBlock = -1;
  private readonly entries: (ChatReasoningEntry | null)[] = [];
  private readonly tools: ToolSlot[] = [];
  private readonly toolsByIndex = new Map<number, ToolSlot>();
  private lastTool: ToolSlot | undefined;
  private textSeen = false;
  private finishReason: string | undefined;
  private usage: ChatUsage | undefined;
  private id: string | undefined;
  private model: string | undefined;
  /** `data: [DONE]` came: the stream ended on purpose, finish_reason or not. */
  private doneSeen = false;
  /** A mid-stream error chunk: the finish is this failure (after the usage it carried). */
  private streamError: LlmError | undefined;

  constructor(private readonly route: OpenAIRoute) {}

  push(event: ChatEvent): void {
    if (event === CHAT_DONE) {
      this.doneSeen = true;
      return;
    }
    const chunk = event;
    if (this.id === undefined && chunk.id) this.id = chunk.id;
    if (this.model === undefined && chunk.model) this.model = chunk.model;
    const usage = chunk.usage ?? chunk.x_groq?.usage;
    if (usage) this.usage = usage;
    if (chunk.error) {
      // What the SDK would have thrown, classified the same way (status from status_code or a numeric code).
      this.streamError = mapSdkError(new OpenAI.APIError(undefined, chunk.error as object, undefined, undefined), this.route.provider, this.route.baseURL);
      return;
    }
    const choice = firstChoice(chunk.choices);
    if (choice === undefined) return;
    const delta = choice.delta;
    if (delta) {
      const reasoning = delta.reasoning_content;
      if (typeof reasoning === 'string' && reasoning.length > 0) this.flowDelta(FLOW_REASONING, reasoning, 'reasoning_content');
      else if (typeof delta.reasoning === 'string' && delta.reasoning.length > 0) this.flowDelta(FLOW_REASONING, delta.reasoning, 'reasoning');
      if (typeof delta.content === 'string' && delta.content.length > 0) this.flowDelta(FLOW_TEXT, delta.content, undefined);
      if (typeof delta.refusal === 'string' && delta.refusal.length > 0) this.flowDelta(FLOW_REFUSAL, delta.refusal, undefined);
      const calls = delta.tool_calls;
      if (calls) for (let i = 0; i < calls.length; i++) this.toolDelta(calls[i]!);
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  private flowDelta(kind: number, text: string, field: 'reasoning_content' | 'reasoning' | undefined): void {
    if (this.flow !== kind) {
      this.closeFlow();
      const index = this.nextBlock++;
      this.flow = kind;
      this.flowBlock = index;
      if (kind === FLOW_REASONING) {
        this.entries[index] = { field: field! };
      } else {
        this.entries[index] = null;
        this.textSeen = true;
      }
      this.out.push({ type: 'block-start', index, blockType: kind === FLOW_REASONING ? 'reasoning' : 'text' });
    }
    this.out.push(kind === FLOW_REASONING ? { type: 'reasoning-delta', index: this.flowBlock, text } : { type: 'text-delta', index: this.flowBlock, text });
  }

  private closeFlow(): void {
    if (this.flow === FLOW_NONE) return;
    // block-end carries no content (StreamChunkMap): the deltas were the text.
    this.out.push(this.flow === FLOW_REFUSAL ? { type: 'block-end', index: this.flowBlock, block: REFUSAL_ATTRIBUTES } : { type: 'block-end', index: this.flowBlock });
    this.flow = FLOW_NONE;
    this.flowBlock = -1;
  }

  private toolDelta(call: ChatToolDelta): void {
    const fn = call.function;
    const id = call.id || undefined;
    const name = fn?.name || undefined;
    let slot: ToolSlot | undefined;
    if (typeof call.index === 'number') {
      slot = this.toolsByIndex.get(call.index);
      if (slot !== undefined && id !== undefined && slot.id !== '' && slot.id !== id) slot = undefined; // index reused for a new call
    } else if (id !== undefined) {
      slot = this.lastTool !== undefined && this.lastTool.id === id ? this.lastTool : this.tools.find((tool) => tool.id === id);
    } else {
      slot = this.lastTool;
    }
    if (slot === undefined) {
      this.closeFlow();
      const index = this.nextBlock++;
      slot = { block: index, id: id ?? '', name: name ?? '', hasArgs: false };
      this.tools.push(slot);
      this.entries[index] = null;
      if (typeof call.index === 'number') this.toolsByIndex.set(call.index, slot);
      this.out.push(
        id !== undefined && name !== undefined
          ? { type: 'block-start', index, blockType: 'tool-call', id, name }
          : id !== undefined
            ? { type: 'block-start', index, blockType: 'tool-call', id }
            : name !== undefined
              ? { type: 'block-start', index, blockType: 'tool-call', name }
              : { type: 'block-start', index, blockType: 'tool-call' },
      );
    } else {
      let lateId: string | undefined;
      let lateName: string | undefined;
      if (slot.id === '' && id !== undefined) slot.id = lateId = id;
      if (slot.name === '' && name !== undefined) slot.name = lateName = name;
      if (lateId !== undefined || lateName !== undefined) {
        this.out.push({ type: 'tool-call-delta', index: slot.block, ...(lateId ? { id: lateId } : {}), ...(lateName ? { name: lateName } : {}) });
      }
    }
    this.lastTool = slot;
    const args = fn?.arguments;
    if (typeof args === 'string' && args.length > 0) {
      slot.hasArgs = true;
      this.out.push({ type: 'tool-call-delta', index: slot.block, arguments: args });
    }
  }

  /**
   * Closes the open blocks and appends usage and the terminal finish: the error of an error chunk;
   * `stop` when `[DONE]` came without any finish_reason (a gateway that never sends one).
   * @throws LlmError `TRANSPORT` when the body ended with neither a finish_reason nor `[DONE]`.
   */
  finish(): void {
    this.closeFlow();
    if (this.streamError !== undefined) {
      // Open tool calls are left open (their arguments may be cut): the assembler drops them.
      if (this.usage !== undefined) this.out.push({ type: 'usage', usage: normalizeChatUsage(this.usage, this.route.compat) });
      return this.fail(this.streamError.failure);
    }
    let reason = this.finishReason;
    if (reason === undefined) {
      if (!this.doneSeen) throw missingFinishError(this.route.provider);
      reason = 'stop';
    }
    if (reason !== 'length') {
      for (const tool of this.tools) {
        if (tool.id === '') {
          tool.id = syntheticCallId();
          this.out.push({ type: 'tool-call-delta', index: tool.block, id: tool.id });
        }
        if (!tool.hasArgs) {
          tool.hasArgs = true;
          this.out.push({ type: 'tool-call-delta', index: tool.block, arguments: '{}' });
        }
        this.out.push({ type: 'block-end', index: tool.block });
      }
    }
    if (this.usage !== undefined) this.out.push({ type: 'usage', usage: normalizeChatUsage(this.usage, this.route.compat) });
    const provider = this.route.provider;
    switch (reason) {
      case 'stop':
      case 'tool_calls':
      case 'function_call':
      case 'end_turn':
      case 'eos':
        if (this.tools.length > 0) return this.succeed({ kind: 'tool-calls' }, reason);
        if (!this.textSeen) return this.fail(emptyResponseError(provider).failure);
        return this.succeed({ kind: 'stop' }, reason);
      case 'length':
      case 'max_tokens':
        return this.succeed({ kind: 'max-tokens' }, reason);
      case 'content_filter':
        return this.fail(contentFilterError(provider, reason).failure);
      case 'insufficient_system_resource':
        return this.fail(new LlmError('SERVER', `Provider "${provider}" ran out of capacity mid-response (${reason}).`, { details: { provider, providerCode: reason } }).failure);
      default:
        if (this.tools.length > 0) return this.succeed({ kind: 'tool-calls' }, reason);
        if (!this.textSeen) return this.fail(emptyResponseError(provider).failure);
        return this.succeed({ kind: 'stop' }, reason);
    }
  }

  private succeed(finish: { kind: 'stop' | 'tool-calls' | 'max-tokens' }, nativeReason: string): void {
    const response: Record<string, unknown> = { kind: 'openai-chat', version: 1 };
    if (this.id !== undefined) response.id = this.id;
    if (this.model !== undefined) response.model = this.model;
    response.finishReason = nativeReason;
    this.out.push({ type: 'finish', finish, replayState: { response, blocks: this.entries.slice(0, this.nextBlock) } });
  }

  private fail(failure: LlmFailure): void {
    this.out.push({ type: 'finish', finish: { kind: 'error', failure } });
  }
}

/**
 * The choice that is the assistant message: index 0 (or a choice without an index). A server that
 * streams several choices (`n > 1`, chunks interleaved by `choices[].index`) has the others ignored.
 */
function firstChoice(choices: readonly ChatChoice[] | null | undefined): ChatChoice | undefined {
  if (!choices) return undefined;
  for (let i = 0; i < choices.length; i++) {
    const choice = choices[i]!;
    if (choice.index === undefined || choice.index === 0) return choice;
  }
  return undefined;
}

/** Chat usage → TokenUsage (see the module docstring). */
export function normalizeChatUsage(usage: ChatUsage, compat: OpenAIRoute['compat']): TokenUsage {
  const out: { -readonly [K in keyof TokenUsage]: TokenUsage[K] } = {};
  const prompt = num(usage.prompt_tokens);
  const completion = num(usage.completion_tokens);
  const total = num(usage.total_tokens);
  const hit = num(usage.prompt_cache_hit_tokens);
  const miss = num(usage.prompt_cache_miss_tokens);
  const cached = hit ?? num(usage.prompt_tokens_details?.cached_tokens);
  const reasoning = num(usage.completion_tokens_details?.reasoning_tokens);
  if (miss !== undefined) out.inputTokens = miss;
  else if (prompt !== undefined) out.inputTokens = Math.max(0, prompt - (cached ?? 0));
  if (cached !== undefined) out.cacheReadTokens = cached;
  if (completion !== undefined) {
    const excludesReasoning = reasoning !== undefined && reasoning > 0 && (compat === 'xai' || (prompt !== undefined && total !== undefined && prompt + completion + reasoning === total));
    out.outputTokens = excludesReasoning ? completion + reasoning! : completion;
  }
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  return out;
}

function num(value: number | null | undefined): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

// ── Request ────────────────────────────────────────────────────────────────────────────────────

type Json = Record<string, unknown>;

/** The Chat Completions request body for a call (see the module docstring). */
export function buildChatRequest(route: OpenAIRoute, options: GenerateOptions): Json {
  const body: Json = {
    model: options.model,
    messages: buildChatMessages(route, options),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (options.tools !== undefined && options.tools.length > 0) {
    body.tools = options.tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.inputSchema } }));
  }
  if (options.maxTokens !== undefined) body[route.compat === 'openai' ? 'max_completion_tokens' : 'max_tokens'] = options.maxTokens;
  if (options.temperature !== undefined) body.temperature = options.temperature;
  if (options.stop !== undefined && options.stop.length > 0) body.stop = [...options.stop];
  if (options.reasoningEffort !== undefined) body.reasoning_effort = options.reasoningEffort;
  return body;
}

function buildChatMessages(route: OpenAIRoute, options: GenerateOptions): Json[] {
  const out: Json[] = [];
  if (options.system !== undefined && options.system !== '') out.push({ role: 'system', content: options.system });
  const images = acceptsModality(route, options, 'image');
  const files = acceptsModality(route, options, 'file');
  let pendingMedia: Json[] = [];
  const flushMedia = () => {
    if (pendingMedia.length === 0) return;
    out.push({ role: 'user', content: pendingMedia });
    pendingMedia = [];
  };
  for (const message of options.messages) {
    if (message.role === 'assistant') {
      flushMedia();
      out.push(assistantMessage(route, options, message));
      continue;
    }
    if (message.role === 'system') {
      flushMedia();
      out.push({ role: 'system', content: plainText(message.content) });
      continue;
    }
    const rest: ContentBlock[] = [];
    for (const block of message.content) {
      if (block.type !== 'tool-result') {
        rest.push(block);
        continue;
      }
      out.push({ role: 'tool', tool_call_id: block.toolCallId, content: toolResultText(block, images) });
      const media = toolResultMedia(block, images);
      if (media.length > 0) pendingMedia.push({ type: 'text', text: `Images returned by tool call ${block.toolCallId}:` }, ...media);
    }
    if (rest.length > 0) {
      flushMedia();
      out.push({ role: 'user', content: userContent(rest, images, files) });
    }
  }
  flushMedia();
  return out;
}

function assistantMessage(route: OpenAIRoute, options: GenerateOptions, message: Message): Json {
  const source = message.source;
  const replay = source.kind === 'model' && source.provider === options.provider ? source.replayState : undefined;
  const entries = replay?.blocks;
  let text = '';
  let refusal = '';
  let reasoning = '';
  let field: 'reasoning_content' | 'reasoning' = 'reasoning_content';
  const calls: Json[] = [];
  const content = message.content;
  for (let i = 0; i < content.length; i++) {
    const block = content[i]!;
    if (block.type === 'text') {
      if (block.refusal === true && route.compat === 'openai') refusal += block.text;
      else text += block.text;
    } else if (block.type === 'reasoning') {
      if (replay === undefined || block.redacted === true) continue;
      reasoning += block.text;
      const entry = entries?.[i] as ChatReasoningEntry | null | undefined;
      if (entry?.field !== undefined && route.compat !== 'deepseek') field = entry.field;
    } else if (block.type === 'tool-call') {
      calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: block.arguments } });
    }
  }
  const out: Json = { role: 'assistant', content: text };
  if (refusal !== '') out.refusal = refusal;
  if (calls.length > 0) out.tool_calls = calls;
  if (replay !== undefined && reasoning !== '') out[field] = reasoning;
  return out;
}

function userContent(blocks: readonly ContentBlock[], images: boolean, files: boolean): string | Json[] {
  if (blocks.length === 1 && blocks[0]!.type === 'text') return blocks[0]!.text;
  const parts: Json[] = [];
  for (const block of blocks) {
    if (block.type === 'text') parts.push({ type: 'text', text: block.text });
    else if (block.type === 'image') parts.push(images ? { type: 'image_url', image_url: { url: mediaUrl(block) } } : { type: 'text', text: omittedMedia(block) });
    else if (block.type === 'file') {
      parts.push(
        files && block.data !== undefined ? { type: 'file', file: { file_data: mediaUrl(block), ...(block.name ? { filename: block.name } : {}) } } : { type: 'text', text: omittedMedia(block) },
      );
    }
  }
  return parts;
}

function toolResultText(block: ToolResultBlock, images: boolean): string {
  let text = '';
  for (const part of block.content) {
    const piece = part.type === 'text' ? part.text : images ? '' : omittedMedia(part);
    if (piece !== '') text = text === '' ? piece : `${text}\n${piece}`;
  }
  return text;
}

function toolResultMedia(block: ToolResultBlock, images: boolean): Json[] {
  if (!images) return [];
  const out: Json[] = [];
  for (const part of block.content) if (part.type === 'image') out.push({ type: 'image_url', image_url: { url: mediaUrl(part) } });
  return out;
}

function plainText(blocks: readonly ContentBlock[]): string {
  let text = '';
  for (const block of blocks) if (block.type === 'text') text += block.text;
  return text;
}
